package objstore

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// URL schemes.
const (
	schemeFile  = "file"
	schemeS3    = "s3"
	schemeMinio = "minio"
)

// URL parameters, by scheme. doc.go documents each.
const (
	paramRegion        = "region"
	paramEndpoint      = "endpoint"
	paramPathStyle     = "path_style"
	paramSecure        = "secure"
	paramSSE           = "sse"
	paramSSEKMSKeyID   = "sse_kms_key_id"
	paramSSEKMSContext = "sse_kms_context"
	paramSSEBucketKey  = "sse_bucket_key"
)

var knownParams = map[string][]string{
	schemeFile:  nil,
	schemeS3:    {paramEndpoint, paramPathStyle, paramRegion, paramSSE, paramSSEBucketKey, paramSSEKMSContext, paramSSEKMSKeyID},
	schemeMinio: {paramRegion, paramSecure, paramSSE, paramSSEBucketKey, paramSSEKMSContext, paramSSEKMSKeyID},
}

const urlForms = "file:///abs/dir, s3://bucket/prefix or minio://host:port/bucket/prefix"

// location is a parsed store URL.
type location struct {
	Scheme string
	// Dir is the root directory of a file:// store: absolute and clean.
	Dir string
	// Host is the host[:port] of a minio:// store.
	Host string
	// Bucket and Prefix name where objects go; Prefix has no leading or
	// trailing '/' and is "" for the whole bucket.
	Bucket string
	Prefix string
	// Region is the s3:// or minio:// region; "" leaves it to the
	// environment (s3://) or to the server (minio://).
	Region string
	// Endpoint is the base URL of an S3-compatible server for s3://; ""
	// means AWS.
	Endpoint string
	// PathStyle puts the bucket in the path, not the host name (s3://).
	PathStyle bool
	// Secure is HTTPS for minio://.
	Secure bool
	// Encryption is the server-side encryption asked for on every write
	// (s3:// and minio://).
	Encryption encryption
}

// CheckURL reports whether rawURL is a store URL Open would accept, with
// the error Open would return for it, without reaching the store.
func CheckURL(rawURL string) error {
	_, err := parseURL(rawURL)
	return err
}

// parseURL parses a store URL. Every error wraps ErrInvalidURL and says
// what to change.
func parseURL(raw string) (location, error) {
	// Errors show the URL as redactedURL renders it, never as given: a
	// URL that is refused may be refused for holding a credential.
	shown := redactedURL(raw)
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the whole URL; keep only what is wrong.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return location{}, urlError(shown, "cannot parse it (%v)", err)
	}
	if _, ok := knownParams[u.Scheme]; !ok {
		if u.Scheme == "" {
			return location{}, urlError(shown, "it has no scheme; use %s", urlForms)
		}
		return location{}, urlError(shown, "unknown scheme %q; use %s", u.Scheme, urlForms)
	}
	if u.Opaque != "" {
		return location{}, urlError(shown, "it has no '//' after %q; write %s://…", u.Scheme+":", u.Scheme)
	}
	if u.User != nil {
		return location{}, urlError(shown, "%s", credentialsNotInURL)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return location{}, urlError(shown, "it has a '#' fragment; remove it (escape a '#' in a path as %%23)")
	}
	params, err := parseParams(shown, u)
	if err != nil {
		return location{}, err
	}
	loc := location{Scheme: u.Scheme}
	switch u.Scheme {
	case schemeFile:
		err = loc.parseFile(shown, u)
	case schemeS3:
		err = loc.parseS3(shown, u, params)
	case schemeMinio:
		err = loc.parseMinio(shown, u, params)
	}
	if err != nil {
		return location{}, err
	}
	return loc, nil
}

func (l *location) parseFile(shown string, u *url.URL) error {
	if u.Host != "" {
		return urlError(shown, "a file URL has an empty host; write file:///abs/dir (three slashes) for the absolute directory /abs/dir")
	}
	if !filepath.IsAbs(u.Path) {
		return urlError(shown, "a file URL needs an absolute directory; write file:///abs/dir")
	}
	dir := filepath.Clean(u.Path)
	if dir == "/" {
		return urlError(shown, "the file system root cannot be a store; name a directory, e.g. file:///var/lib/strata/bucket")
	}
	l.Dir = dir
	return nil
}

func (l *location) parseS3(shown string, u *url.URL, params map[string]string) error {
	if err := checkBucket(shown, u.Host, "s3://bucket/prefix"); err != nil {
		return err
	}
	l.Bucket = u.Host
	prefix, err := parsePrefix(shown, u.Path)
	if err != nil {
		return err
	}
	l.Prefix = prefix
	if err := l.parseRegion(shown, params); err != nil {
		return err
	}
	if v, ok := params[paramEndpoint]; ok {
		if err := checkEndpoint(shown, v); err != nil {
			return err
		}
		l.Endpoint = v
	}
	if v, ok := params[paramPathStyle]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return urlError(shown, "path_style=%q is not a boolean; write path_style=true or path_style=false", v)
		}
		l.PathStyle = b
	}
	return l.parseEncryption(shown, params)
}

func (l *location) parseMinio(shown string, u *url.URL, params map[string]string) error {
	if u.Hostname() == "" {
		return urlError(shown, "a minio URL names the server; write minio://host:port/bucket/prefix")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return urlError(shown, "port %q is not a number from 1 to 65535", p)
		}
	}
	l.Host = u.Host
	bucket, rest, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if err := checkBucket(shown, bucket, "minio://host:port/bucket/prefix"); err != nil {
		return err
	}
	l.Bucket = bucket
	prefix, err := parsePrefix(shown, "/"+rest)
	if err != nil {
		return err
	}
	l.Prefix = prefix
	if err := l.parseRegion(shown, params); err != nil {
		return err
	}
	l.Secure = true
	if v, ok := params[paramSecure]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return urlError(shown, "secure=%q is not a boolean; write secure=false for plain HTTP or secure=true for HTTPS", v)
		}
		l.Secure = b
	}
	return l.parseEncryption(shown, params)
}

func (l *location) parseRegion(shown string, params map[string]string) error {
	v, ok := params[paramRegion]
	if !ok {
		return nil
	}
	if v == "" || len(v) > 64 || strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) >= 0 {
		return urlError(shown, "region=%q is not a region name; write e.g. region=us-east-1", v)
	}
	l.Region = v
	return nil
}

// parseParams returns the query parameters, refusing unknown and repeated
// ones so that a typo cannot silently fall back to a default.
func parseParams(shown string, u *url.URL) (map[string]string, error) {
	values, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, urlError(shown, "cannot parse its query (%v)", err)
	}
	known := knownParams[u.Scheme]
	params := make(map[string]string, len(values))
	for name, vs := range values {
		if !slices.Contains(known, name) {
			if looksLikeCredential(name) {
				return nil, urlError(shown, "parameter %q looks like a credential: %s", name, credentialsNotInURL)
			}
			if len(known) == 0 {
				return nil, urlError(shown, "a %s URL takes no parameters; remove %q", u.Scheme, name)
			}
			return nil, urlError(shown, "unknown parameter %q; a %s URL takes %s", name, u.Scheme, strings.Join(known, ", "))
		}
		if len(vs) != 1 {
			return nil, urlError(shown, "parameter %q is given %d times; give it once", name, len(vs))
		}
		params[name] = vs[0]
	}
	return params, nil
}

// parsePrefix turns the URL path after the bucket into a key prefix.
func parsePrefix(shown, path string) (string, error) {
	prefix := strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/")
	if prefix == "" {
		return "", nil
	}
	if err := checkKey(prefix); err != nil {
		return "", urlError(shown, "its prefix %q is not a valid key (%v); use '/'-separated names without '.', '..' or empty parts", prefix, err)
	}
	return prefix, nil
}

// checkBucket applies S3's bucket naming rules, so that a bad name fails
// here rather than as an obscure server error.
func checkBucket(shown, bucket, form string) error {
	if bucket == "" {
		return urlError(shown, "it names no bucket; write %s", form)
	}
	ok := len(bucket) >= 3 && len(bucket) <= 63
	for i := 0; ok && i < len(bucket); i++ {
		c := bucket[i]
		edge := i == 0 || i == len(bucket)-1
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
		case (c == '-' || c == '.') && !edge:
		default:
			ok = false
		}
	}
	if !ok || strings.Contains(bucket, "..") {
		return urlError(shown, "bucket %q breaks S3's naming rules; use 3 to 63 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit", bucket)
	}
	return nil
}

func checkEndpoint(shown, endpoint string) error {
	e, err := url.Parse(endpoint)
	if err == nil && e.User != nil {
		return urlError(shown, "endpoint has credentials in it: %s", credentialsNotInURL)
	}
	if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.User != nil || e.RawQuery != "" || e.Fragment != "" {
		return urlError(shown, "endpoint=%q is not an http(s) base URL; write e.g. endpoint=http://127.0.0.1:9000 (percent-encoded inside the store URL if it has a path)", maskUserinfo(endpoint))
	}
	return nil
}

func urlError(shown, format string, args ...any) error {
	return fmt.Errorf("%w %q: %s", ErrInvalidURL, shown, fmt.Sprintf(format, args...))
}

// String renders the location as the canonical URL that parses back to it.
func (l location) String() string {
	u := url.URL{Scheme: l.Scheme}
	params := url.Values{}
	switch l.Scheme {
	case schemeFile:
		u.Path = l.Dir
	case schemeS3:
		u.Host = l.Bucket
		u.Path = joinPath("/", l.Prefix)
		if l.Endpoint != "" {
			params.Set(paramEndpoint, l.Endpoint)
		}
		if l.PathStyle {
			params.Set(paramPathStyle, "true")
		}
	case schemeMinio:
		u.Host = l.Host
		u.Path = joinPath("/"+l.Bucket, l.Prefix)
		if !l.Secure {
			params.Set(paramSecure, "false")
		}
	}
	l.Encryption.setParams(params)
	if l.Region != "" {
		params.Set(paramRegion, l.Region)
	}
	u.RawQuery = params.Encode()
	return u.String()
}

func joinPath(dir, rest string) string {
	if rest == "" {
		return dir
	}
	return strings.TrimSuffix(dir, "/") + "/" + rest
}
