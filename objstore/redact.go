package objstore

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
)

// No credential is ever printed: not in an error, a log line or a
// formatted Config. Credentials live only in Config (or the environment),
// never in a URL; Config formats, logs and marshals to JSON with its
// secrets redacted; and an error about a URL shows it with anything that
// may be a credential masked.

// credentialsNotInURL is the fix for a URL that carries credentials.
const credentialsNotInURL = "credentials never go in the URL, where logs would show them; " +
	"set Config.AccessKeyID and Config.SecretAccessKey, or leave them empty and set the environment " +
	"(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; for s3:// also AWS's default credential chain: " +
	"shared config files, web identity, container and instance roles)"

// redacted stands for a secret in printed output.
const redacted = "xxxxx"

// redactedURL renders a store URL for an error message with what may be a
// credential masked: the userinfo before the host (all of it: a lone user
// name may be a token), the userinfo of an endpoint parameter, and the
// values of parameters the scheme does not take (a secret_key=…, say). It
// works on the text, so that a URL that does not parse is masked too.
func redactedURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, ":")
	if !ok {
		scheme, rest = "", raw
	}
	rest = maskUserinfo(rest)
	if ok {
		rest = scheme + ":" + rest
	}
	head, query, ok := strings.Cut(rest, "?")
	if !ok {
		return rest
	}
	query, fragment, hasFragment := strings.Cut(query, "#")
	known := knownParams[strings.ToLower(scheme)]
	pairs := strings.Split(query, "&")
	for i, pair := range pairs {
		name, value, hasValue := strings.Cut(pair, "=")
		if !hasValue {
			continue
		}
		unescaped, err := url.QueryUnescape(name)
		switch {
		case err != nil || !slices.Contains(known, unescaped):
			value = redacted
		case unescaped == paramEndpoint:
			if v, err := url.QueryUnescape(value); err != nil {
				value = redacted
			} else if masked := maskUserinfo(v); masked != v {
				value = url.QueryEscape(masked)
			}
		}
		pairs[i] = name + "=" + value
	}
	shown := head + "?" + strings.Join(pairs, "&")
	if hasFragment {
		shown += "#" + fragment
	}
	return shown
}

// maskUserinfo masks the userinfo of the text after a URL's "scheme:":
// "//user:secret@host/…" becomes "//xxxxx@host/…". As url.Parse does, the
// host starts after the last '@' before the path, query or fragment.
func maskUserinfo(s string) string {
	start := 0
	if i := strings.Index(s, "//"); i >= 0 && i == strings.IndexAny(s, "/?#") {
		start = i + 2 // a whole URL, "http://…", or the part after "s3:"
	}
	end := len(s)
	if i := strings.IndexAny(s[start:], "/?#"); i >= 0 {
		end = start + i
	}
	at := strings.LastIndex(s[start:end], "@")
	if at < 0 {
		return s
	}
	return s[:start] + redacted + s[start+at:]
}

// looksLikeCredential reports whether an unknown URL parameter's name says
// it holds a credential, so that the error can say where credentials go.
func looksLikeCredential(name string) bool {
	name = strings.ToLower(name)
	for _, word := range []string{"secret", "password", "passwd", "token", "credential", "access_key", "accesskey", "access-key", "signature"} {
		if strings.Contains(name, word) {
			return true
		}
	}
	return false
}

// configFields is Config without its methods, so that Format can print a
// copy with the secrets replaced the way fmt prints any struct.
type configFields Config

// redactedFields is c with every credential replaced by redacted; empty
// ones stay empty, so the output still says which are set.
func (c Config) redactedFields() configFields {
	for _, secret := range []*string{&c.AccessKeyID, &c.SecretAccessKey, &c.SessionToken} {
		if *secret != "" {
			*secret = redacted
		}
	}
	return configFields(c)
}

// Format prints c as fmt prints any struct, for every verb (%v, %+v, %#v,
// %s, %d, …), but with AccessKeyID, SecretAccessKey and SessionToken
// shown as "xxxxx" when set. Implementing fmt.Formatter rather than
// String keeps the secrets out of verbs that would bypass String, such as
// %d, which prints a struct's string fields one by one.
func (c Config) Format(f fmt.State, verb rune) {
	s := fmt.Sprintf(fmt.FormatString(f, verb), c.redactedFields())
	if verb == 'v' && f.Flag('#') {
		s = strings.Replace(s, "objstore.configFields", "objstore.Config", 1)
	}
	_, _ = f.Write([]byte(s))
}

// LogValue logs c with its credentials redacted, as Format prints them.
func (c Config) LogValue() slog.Value {
	r := c.redactedFields()
	return slog.GroupValue(
		slog.Int64("part_size", r.PartSize),
		slog.Int("upload_concurrency", r.UploadConcurrency),
		slog.String("access_key_id", r.AccessKeyID),
		slog.String("secret_access_key", r.SecretAccessKey),
		slog.String("session_token", r.SessionToken),
		slog.Int("max_connections", r.MaxConnections),
	)
}

// MarshalJSON encodes c with its credentials redacted, as Format prints
// them, so that a Config inside a structure a JSON log handler encodes
// does not leak them either. Config is never stored as JSON.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(c.redactedFields())
}
