// Package objstore is strata's one small interface over object storage: the
// bucket that sealed log segments are uploaded to and read back from by byte
// range. Three backends sit behind it, chosen by URL, and one conformance
// suite (objstoretest.Conformance) holds them to the same behaviour.
//
// # Usage
//
//	store, err := objstore.Open(ctx, "s3://bucket/strata?region=eu-west-1", objstore.DefaultConfig())
//	store = objstore.Instrument(store, registry)
//	err = store.Put(ctx, key, segmentFile, size)               // one PUT, or multipart when large
//	tail, size, err := objstore.ReadSuffix(ctx, store, key, n) // footer and indexes, one GET
//	err = objstore.ReadAt(ctx, store, key, block, offset)      // one ranged GET
//
// # The interface
//
// Store has Put, Get (a byte range, or to the end), GetSuffix (the last n
// bytes and the object's size), Head, List (by prefix, paginated under the
// hood, as an iterator) and Delete. ReadAt and ReadSuffix wrap Get and
// GetSuffix for callers that want bytes.
//
// # Invariants, on every backend
//
//   - Put is all or nothing: no reader ever sees part of an object, and a
//     failed or cancelled Put leaves the previous object (or none) in
//     place. file:// writes a temporary file in the target's directory
//     (with O_DIRECT where the file system has it, so an upload's bytes do
//     not pass through the page cache), fsyncs it, renames it over the
//     target and fsyncs the directory; the S3 backends send one PUT, or a
//     multipart upload that is completed only when every part is up and
//     aborted otherwise.
//   - Put stores exactly the declared size: a reader that runs short or
//     long is ErrSizeMismatch and stores nothing.
//   - A reader from Get or GetSuffix yields exactly the bytes asked for, of
//     one version of the object, or fails; it never ends early with io.EOF.
//     Each backend checks the body's length itself, so a body cut short
//     anywhere between the disk and the client is an error.
//   - Ranges are strict: a Get's range must lie within the object
//     (ErrInvalidRange otherwise, before or instead of any partial answer).
//     Only a suffix read is cut to the object's size.
//   - Get, GetSuffix and Head of a missing key are ErrNotFound; a missing
//     bucket is ErrBucketNotFound, never ErrNotFound (except for Head on
//     S3, whose 404 carries no body to tell them apart; Open checks the
//     bucket).
//   - Delete is idempotent. List yields keys in ascending byte order.
//   - After Put returns, Get, Head and List see the object (S3 is strongly
//     consistent; file:// renames and fsyncs).
//
// # Timeouts, retries, checksums
//
// The context is the only timeout of every call and of the reader a Get
// returns: stores add none of their own beyond bounds on connection set-up.
// Stores never retry; a call is one attempt (one HTTP request, or one per
// multipart part). The AWS SDK's retryer is replaced by aws.NopRetryer and
// minio-go's retries are off (MaxRetries 1), because the callers (offload,
// remotefetch) retry with their own backoff, jitter and deadlines, and
// retries at two layers would multiply attempts and hide them from metrics.
//
// The S3 backends send an explicit CRC-32 with every PUT and every part
// (ChecksumAlgorithm CRC32 on CreateMultipartUpload and UploadPart), repeat
// the parts' checksums on CompleteMultipartUpload along with the object's
// size, and let the server verify them. Whole-object GETs ask for the
// stored checksum of a single-PUT object and the client library verifies
// it at the end of the body (a multipart object's composite checksum cannot
// be checked that way); ranged GETs rely on the readers' own CRC-32C over
// segment sections and batches.
//
// Multipart: an object larger than Config.PartSize (default 16 MiB, at
// least MinPartSize, 5 MiB) goes up in parts of that size, or larger if it
// would need more than MaxParts, with at most Config.UploadConcurrency parts
// in flight; each holds a buffer, so an upload uses at most
// UploadConcurrency × PartSize of memory. An upload that fails is aborted;
// if even the abort fails, a warning is logged, and a bucket lifecycle rule
// (AbortIncompleteMultipartUpload) should reclaim the parts.
//
// # Keys
//
// A key is 1 to MaxKeyLength bytes of UTF-8, '/'-separated into non-empty
// components of at most 255 bytes that are not "." or "..", hold no control
// character or backslash, and do not start with ".strata-" (reserved for
// file://'s temporary files). The same grammar holds on every backend, so a key that
// works on file:// works on S3. Other keys are ErrInvalidKey. On file:// a
// key cannot be both an object and a directory of objects ("a" and "a/b");
// strata's key layout never asks for that.
//
// # URLs
//
//	file:///abs/dir
//
// The embedded default: objects are files under /abs/dir (created if
// missing), key components becoming subdirectories. Three slashes: the
// host is empty and the path absolute. No parameters. All file access goes
// through an os.Root, so no key or symlink reaches outside the directory.
//
//	s3://bucket/prefix?region=…&endpoint=…&path_style=true&sse=…
//
// Amazon S3 or any S3-compatible server, on aws-sdk-go-v2. Keys go under
// prefix/ in bucket (no prefix: the bucket's root). Parameters:
//
//	region      the bucket's region, e.g. us-east-1. Without it, the AWS
//	            environment's (AWS_REGION, the shared config file); Open
//	            fails if there is none.
//	endpoint    base URL of an S3-compatible server, e.g.
//	            http://127.0.0.1:9000 (percent-encode it if it has a path or
//	            query). Without it, AWS's endpoint for the region.
//	path_style  true puts the bucket in the URL path rather than the host
//	            name; most S3-compatible servers need it. Default false.
//	sse, sse_kms_key_id, sse_kms_context, sse_bucket_key
//	            server-side encryption; see below.
//
// Credentials: Config.AccessKeyID and SecretAccessKey (and SessionToken),
// or else AWS's default credential chain; see below.
//
//	minio://host:port/bucket/prefix?secure=false
//
// An S3-compatible server through minio-go. Parameters:
//
//	secure  false for plain HTTP; default true (HTTPS).
//	region  the bucket's region, when the server needs one named.
//	sse, sse_kms_key_id, sse_kms_context, sse_bucket_key
//	        server-side encryption, as for s3://.
//
// Credentials: Config's, or else AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
// (and AWS_SESSION_TOKEN), or else MINIO_ROOT_USER/MINIO_ROOT_PASSWORD.
// minio:// reads no config files and assumes no role.
//
// Unknown or repeated parameters are refused, as is anything else Open
// cannot make sense of: the error (ErrInvalidURL) names the problem and the
// fix.
//
// # Server-side encryption
//
// The sse parameters of s3:// and minio:// ask the server to encrypt every
// object the store writes: they go on each PutObject and each
// CreateMultipartUpload, as S3's x-amz-server-side-encryption headers.
// Parts, completions and reads carry none: the server decrypts SSE-S3 and
// SSE-KMS objects for any reader allowed to read them (for SSE-KMS, one
// also allowed kms:Decrypt on the key).
//
//	sse=AES256       SSE-S3: keys S3 manages.
//	sse=aws:kms      SSE-KMS: a key in AWS KMS (also written aes256 and
//	                 AWS:KMS; the canonical URL spells them as here).
//	sse_kms_key_id   the KMS key: a key id, key ARN, alias/name or alias
//	                 ARN. Without it, the bucket's default KMS key, else
//	                 the account's aws/s3 key.
//	sse_kms_context  an encryption context, a JSON object of strings
//	                 (percent-encoded: sse_kms_context=%7B%22app%22%3A%22strata%22%7D
//	                 is {"app":"strata"}), sent base64-encoded.
//	sse_bucket_key   true or false: whether S3 uses a bucket-level key for
//	                 SSE-KMS, which spares most per-object KMS calls (each
//	                 PUT and each GET otherwise calls KMS; remotefetch's
//	                 ranged reads make many GETs). Without it, the bucket's
//	                 setting.
//
// Without sse, no header is sent and the bucket's default encryption
// applies (on AWS, SSE-S3 at least). Any other sse value is refused,
// naming the valid ones, and so are sse_kms_key_id, sse_kms_context and
// sse_bucket_key without sse=aws:kms. The file:// backend takes none of
// them. The store does not check that the server honoured the headers: a
// server without encryption (versitygw, say) may ignore them.
//
// # Credentials
//
// Credentials are never part of a URL, so URLs can be logged: a URL with
// user information (s3://KEY:SECRET@bucket), an endpoint with it, or an
// unknown parameter named like a credential (secret_key=…) is refused,
// and the error shows the URL with them masked. Config prints, logs (slog)
// and encodes to JSON with its credentials replaced by "xxxxx", whatever
// the verb, so a Config in a log line or an error shows whether they are
// set and nothing more. No backend logs a credential or a signed request.
//
// An s3:// store uses Config.AccessKeyID and SecretAccessKey (with
// SessionToken, if set) when they are set. Otherwise it uses the AWS SDK's
// default credential chain, which takes the first of these that is
// configured, and does not fall back to the next if that one then fails:
//
//  1. AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with
//     AWS_SESSION_TOKEN) from the environment;
//  2. web identity from the environment: AWS_WEB_IDENTITY_TOKEN_FILE and
//     AWS_ROLE_ARN (AWS_ROLE_SESSION_NAME optional), exchanged with STS
//     AssumeRoleWithWebIdentity (EKS IRSA sets these);
//  3. the profile (AWS_PROFILE, else "default") of the shared config and
//     credentials files (~/.aws/config and ~/.aws/credentials, or
//     AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE): static keys,
//     credential_source, web_identity_token_file, SSO, login or
//     credential_process, with role_arn assumed on top;
//  4. container credentials: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (ECS
//     task roles) or AWS_CONTAINER_CREDENTIALS_FULL_URI (EKS Pod
//     Identity), with AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE);
//  5. the EC2 instance role, from the instance metadata service (IMDSv2,
//     at AWS_EC2_METADATA_SERVICE_ENDPOINT if set), unless
//     AWS_EC2_METADATA_DISABLED=true.
//
// The store narrows none of it (no anonymous credentials, IMDS left on).
// Temporary credentials are cached and refreshed before they expire. As
// with every other request, the chain's own calls (STS, IMDS, the
// container endpoint) are made once, not retried. AWS_ENDPOINT_URL_STS
// points STS elsewhere (a regional or private endpoint). Open checks the
// credentials: its HeadBucket is the first request signed with them.
//
// # Metrics
//
// Instrument wraps a store and registers:
//
//	strata_objstore_requests_total{operation, outcome}
//	strata_objstore_request_duration_seconds{operation}
//	strata_objstore_read_bytes_total
//	strata_objstore_written_bytes_total
//
// operation is put, get, get_suffix, head, list or delete; outcome is
// success, not_found, invalid_request, canceled, timeout or error. A get is
// counted when its reader is closed, so a body that fails mid-way is an
// error; its latency is to the response headers. A multipart put and a
// paginated list count once each. The requests the product reports per GiB:
//
//	sum(rate(strata_objstore_requests_total{operation="put"}[5m]))
//	  / (rate(strata_objstore_written_bytes_total[5m]) / 2^30)
//	sum(rate(strata_objstore_requests_total{operation=~"get|get_suffix"}[5m]))
//	  / (rate(strata_objstore_read_bytes_total[5m]) / 2^30)
package objstore
