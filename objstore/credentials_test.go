package objstore_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/objstore"
	"github.com/stratalog/strata/objstore/objstoretest"
)

// An s3:// store without static credentials reaches each source of AWS's
// default chain that the environment configures: web identity (STS), the
// shared credentials file, container credentials and the EC2 instance role
// (IMDS). Each source is a stand-in server that hands out the versitygw's
// own key, so the store works only if the credentials came from there:
// nothing else in the environment holds them. Every request that reaches
// the versitygw is signed with that key.
//
// The stand-ins issue no session token, though real STS, container and
// instance credentials always carry one: versitygw refuses a session token
// for its root account, the only one it has.
func TestS3CredentialChain(t *testing.T) {
	gw := versityGW(t)
	key, secret := gw.Config().AccessKeyID, gw.Config().SecretAccessKey
	expires := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)

	for _, tt := range []struct {
		name string
		// setup configures one source in the environment and returns
		// what its server saw, checked after the store was used.
		setup func(t *testing.T) (check func(t *testing.T))
	}{
		{"WebIdentity", func(t *testing.T) func(t *testing.T) {
			tokenFile := filepath.Join(t.TempDir(), "token")
			if err := os.WriteFile(tokenFile, []byte("web-identity-jwt"), 0o600); err != nil {
				t.Fatal(err)
			}
			sts := newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/xml")
				fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><Expiration>%s</Expiration></Credentials>
    <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/strata/strata-test</Arn><AssumedRoleId>AROAEXAMPLE:strata-test</AssumedRoleId></AssumedRoleUser>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>`, key, secret, expires)
			})
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile)
			t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/strata")
			t.Setenv("AWS_ROLE_SESSION_NAME", "strata-test")
			t.Setenv("AWS_ENDPOINT_URL_STS", sts.URL)
			return func(t *testing.T) {
				form := sts.onlyRequest(t).Form
				for name, want := range map[string]string{
					"Action":           "AssumeRoleWithWebIdentity",
					"RoleArn":          "arn:aws:iam::123456789012:role/strata",
					"RoleSessionName":  "strata-test",
					"WebIdentityToken": "web-identity-jwt",
				} {
					if got := form.Get(name); got != want {
						t.Errorf("STS request %s=%q, want %q", name, got, want)
					}
				}
			}
		}},
		{"SharedCredentialsFile", func(t *testing.T) func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "credentials")
			content := fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", key, secret)
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
			return func(*testing.T) {}
		}},
		{"Container", func(t *testing.T) func(t *testing.T) {
			endpoint := newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewEncoder(w).Encode(map[string]string{"AccessKeyId": key, "SecretAccessKey": secret, "Expiration": expires})
			})
			t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", endpoint.URL+"/v2/credentials")
			t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "container-token")
			return func(t *testing.T) {
				req := endpoint.onlyRequest(t)
				if req.URL.Path != "/v2/credentials" || req.Header.Get("Authorization") != "container-token" {
					t.Errorf("container credentials request %s with Authorization %q, want /v2/credentials with the token", req.URL.Path, req.Header.Get("Authorization"))
				}
			}
		}},
		{"InstanceRole", func(t *testing.T) func(t *testing.T) {
			imds := newStandIn(t, func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
					w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
					_, _ = w.Write([]byte("imds-session"))
				case r.Header.Get("X-Aws-Ec2-Metadata-Token") != "imds-session":
					http.Error(w, "no IMDSv2 token", http.StatusUnauthorized)
				case r.URL.Path == "/latest/meta-data/iam/security-credentials/":
					_, _ = w.Write([]byte("strata-role"))
				case r.URL.Path == "/latest/meta-data/iam/security-credentials/strata-role":
					_ = json.NewEncoder(w).Encode(map[string]string{
						"Code": "Success", "Type": "AWS-HMAC", "LastUpdated": time.Now().UTC().Format(time.RFC3339),
						"AccessKeyId": key, "SecretAccessKey": secret, "Expiration": expires,
					})
				default:
					http.NotFound(w, r)
				}
			})
			t.Setenv("AWS_EC2_METADATA_DISABLED", "")
			t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
			return func(t *testing.T) {
				var paths []string
				for _, r := range imds.requests() {
					paths = append(paths, r.Method+" "+r.URL.Path)
				}
				want := "GET /latest/meta-data/iam/security-credentials/strata-role"
				if len(paths) == 0 || paths[len(paths)-1] != want {
					t.Errorf("IMDS requests %q, want the role's credentials last (%s)", paths, want)
				}
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			isolateCredentialChain(t)
			check := tt.setup(t)

			proxy, err := objstoretest.NewFaultProxy(gw.Endpoint)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(proxy.Close)
			all := proxy.Add(nil, objstoretest.Pass(), 0)

			cfg := gw.Config()
			cfg.AccessKeyID, cfg.SecretAccessKey = "", ""
			s, err := objstore.Open(t.Context(), objstoretest.S3URL(proxy.URL(), testBucket, "chain-"+tt.name), cfg)
			if err != nil {
				t.Fatalf("Open with credentials from %s: %v", tt.name, err)
			}
			t.Cleanup(func() { _ = s.Close() })
			data := []byte("signed by the chain")
			if err := s.Put(t.Context(), "k", bytes.NewReader(data), int64(len(data))); err != nil {
				t.Fatalf("Put: %v", err)
			}
			got := make([]byte, len(data))
			if err := objstore.ReadAt(t.Context(), s, "k", got, 0); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("ReadAt = %q, %v; want %q", got, err, data)
			}
			requests := all.Requests()
			if len(requests) < 3 { // HeadBucket, PutObject, GetObject
				t.Fatalf("%d requests reached the server, want at least 3", len(requests))
			}
			for _, r := range requests {
				if auth := r.Header.Get("Authorization"); !strings.Contains(auth, "Credential="+key+"/") {
					t.Errorf("%s %s signed as %q, want Credential=%s/…", r.Method, r.URL, auth, key)
				}
			}
			check(t)
		})
	}
}

// isolateCredentialChain empties every source of AWS's default credential
// chain for the test, so that only the one a test sets up can answer.
func isolateCredentialChain(t *testing.T) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for name, value := range map[string]string{
		"AWS_ACCESS_KEY_ID":                      "",
		"AWS_SECRET_ACCESS_KEY":                  "",
		"AWS_SESSION_TOKEN":                      "",
		"AWS_WEB_IDENTITY_TOKEN_FILE":            "",
		"AWS_ROLE_ARN":                           "",
		"AWS_PROFILE":                            "",
		"AWS_CONFIG_FILE":                        none,
		"AWS_SHARED_CREDENTIALS_FILE":            none,
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI":     "",
		"AWS_EC2_METADATA_DISABLED":              "true",
		"AWS_ENDPOINT_URL":                       "",
		"AWS_ENDPOINT_URL_S3":                    "",
		"AWS_ENDPOINT_URL_STS":                   "",
	} {
		t.Setenv(name, value)
	}
}

// standIn is an HTTP server standing in for a credential source, recording
// the requests it answers.
type standIn struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request // with the form parsed
}

func newStandIn(t *testing.T, answer http.HandlerFunc) *standIn {
	t.Helper()
	s := &standIn{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		s.seen = append(s.seen, r)
		s.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *standIn) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.seen...)
}

// onlyRequest is the one request the stand-in answered: the credentials
// were fetched once and cached.
func (s *standIn) onlyRequest(t *testing.T) *http.Request {
	t.Helper()
	seen := s.requests()
	if len(seen) != 1 {
		t.Fatalf("credential source asked %d times, want once", len(seen))
	}
	return seen[0]
}
