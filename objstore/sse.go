package objstore

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Values of the sse URL parameter: the x-amz-server-side-encryption header,
// as S3 spells it.
const (
	sseS3  = "AES256"  // SSE-S3: keys S3 manages
	sseKMS = "aws:kms" // SSE-KMS: a key in AWS KMS
)

// maxKMSKeyID bounds sse_kms_key_id: the longest key or alias ARN is far
// shorter (KMS's own limit on a key id argument is 2048).
const maxKMSKeyID = 2048

// encryption is the server-side encryption a store asks for on every object
// it writes: the sse parameters of an s3:// or minio:// URL. It is sent on
// each PutObject and CreateMultipartUpload; parts, completions and reads
// need nothing, the server decrypting SSE-S3 and SSE-KMS objects itself.
// The zero value sends no header: the bucket's default encryption applies.
type encryption struct {
	// Mode is "", sseS3 or sseKMS.
	Mode string
	// KMSKeyID is the KMS key of SSE-KMS: a key id, key ARN, alias name
	// (alias/…) or alias ARN. "" leaves the choice to S3: the bucket's
	// default key, else the account's AWS managed key (aws/s3).
	KMSKeyID string
	// KMSContext is the SSE-KMS encryption context, a JSON object of
	// strings in canonical form (keys sorted); "" sends none.
	KMSContext string
	// BucketKey is the sse_bucket_key parameter: "" sends no header (the
	// bucket's setting applies), "true" or "false" is sent as is.
	BucketKey string
}

// parseEncryption reads the sse parameters. Only SSE-KMS takes a key, a
// context or a bucket key, so any of them without sse=aws:kms is refused
// rather than ignored.
func (l *location) parseEncryption(shown string, params map[string]string) error {
	var e encryption
	if v, ok := params[paramSSE]; ok {
		switch {
		case strings.EqualFold(v, sseS3):
			e.Mode = sseS3
		case strings.EqualFold(v, sseKMS):
			e.Mode = sseKMS
		default:
			return urlError(shown, "sse=%q is not a server-side encryption; write sse=%s (SSE-S3) or sse=%s (SSE-KMS)", v, sseS3, sseKMS)
		}
	}
	for _, name := range []string{paramSSEKMSKeyID, paramSSEKMSContext, paramSSEBucketKey} {
		if _, ok := params[name]; ok && e.Mode != sseKMS {
			return urlError(shown, "%s applies to SSE-KMS only; add sse=%s, or remove %s", name, sseKMS, name)
		}
	}
	if v, ok := params[paramSSEKMSKeyID]; ok {
		if v == "" || len(v) > maxKMSKeyID || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
			return urlError(shown, "sse_kms_key_id=%q is not a KMS key; write a key id, key ARN or alias (alias/name), or leave it out for S3's default key", v)
		}
		e.KMSKeyID = v
	}
	if v, ok := params[paramSSEKMSContext]; ok {
		var pairs map[string]string
		// Invalid UTF-8 would come back from json.Unmarshal as U+FFFD,
		// which is not what was meant.
		if err := json.Unmarshal([]byte(v), &pairs); err != nil || len(pairs) == 0 || !utf8.ValidString(v) {
			return urlError(shown, `sse_kms_context=%q is not an encryption context; write a JSON object of strings, e.g. sse_kms_context={"app":"strata"} (percent-encoded)`, v)
		}
		canonical, err := json.Marshal(pairs) // sorts the keys
		if err != nil {
			return urlError(shown, "sse_kms_context=%q: %v", v, err)
		}
		e.KMSContext = string(canonical)
	}
	if v, ok := params[paramSSEBucketKey]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return urlError(shown, "sse_bucket_key=%q is not a boolean; write sse_bucket_key=true or sse_bucket_key=false", v)
		}
		e.BucketKey = strconv.FormatBool(b)
	}
	l.Encryption = e
	return nil
}

// setParams adds the parameters that select e to a canonical URL's query.
func (e encryption) setParams(params url.Values) {
	if e.Mode == "" {
		return
	}
	params.Set(paramSSE, e.Mode)
	if e.KMSKeyID != "" {
		params.Set(paramSSEKMSKeyID, e.KMSKeyID)
	}
	if e.KMSContext != "" {
		params.Set(paramSSEKMSContext, e.KMSContext)
	}
	if e.BucketKey != "" {
		params.Set(paramSSEBucketKey, e.BucketKey)
	}
}

// kmsContextHeader is the encryption context as the
// x-amz-server-side-encryption-context header carries it: base64 of the
// JSON. "" when there is none.
func (e encryption) kmsContextHeader() string {
	if e.KMSContext == "" {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(e.KMSContext))
}
