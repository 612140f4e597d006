package objstore

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckKey(t *testing.T) {
	t.Parallel()
	for _, key := range []string{
		"a", "topic-0/3/00000000000000000042-0b5e.seg", "a b/c", "ü/€", ".hidden", "a..b", "..x", "x..",
		strings.Repeat("k", 255),
		strings.Repeat(strings.Repeat("k", 254)+"/", 4) + "kkkk", // MaxKeyLength bytes
	} {
		if err := checkKey(key); err != nil {
			t.Errorf("checkKey(%q) = %v, want nil", key, err)
		}
	}
	for _, key := range []string{
		"", "/a", "a/", "a//b", ".", "..", "a/.", "a/..", "./a", "../a", "a/../b",
		"nul\x00", "newline\n", "del\x7f", `back\slash`, "\xff", ".strata-tmp-1", "a/.strata-x/b",
		strings.Repeat("k", 256),
		strings.Repeat(strings.Repeat("k", 254)+"/", 4) + "kkkkk",
	} {
		if err := checkKey(key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("checkKey(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "a", "a/", "a/b", "a/b/", "topic-0/3/0000", "a/.", "a/..", "a/.strata"} {
		if err := checkPrefix(prefix); err != nil {
			t.Errorf("checkPrefix(%q) = %v, want nil", prefix, err)
		}
	}
	for _, prefix := range []string{"/", "/a", "a//", "a//b", "../", "a/../", "./x", "\xff", "a\x00"} {
		if err := checkPrefix(prefix); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("checkPrefix(%q) = %v, want ErrInvalidKey", prefix, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	for name, edit := range map[string]func(*Config){
		"part size below S3's minimum": func(c *Config) { c.PartSize = MinPartSize - 1 },
		"part size above S3's maximum": func(c *Config) { c.PartSize = MaxPartSize + 1 },
		"no upload concurrency":        func(c *Config) { c.UploadConcurrency = 0 },
		"access key without secret":    func(c *Config) { c.AccessKeyID = "id" },
		"secret without access key":    func(c *Config) { c.SecretAccessKey = "secret" },
		"session token alone":          func(c *Config) { c.SessionToken = "token" },
	} {
		c := DefaultConfig()
		edit(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidConfig", name, err)
		}
	}
}
