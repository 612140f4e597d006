package objstore

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxKeyLength is the longest key, in bytes, that every backend accepts
// (S3's limit, counted after the store's URL prefix is added).
const MaxKeyLength = 1024

// maxComponentLength is the longest '/'-separated key component, in bytes:
// the longest file name most file systems take.
const maxComponentLength = 255

// reservedPrefix starts the names the file backend gives to objects still
// being written. No key component may start with it, on any backend, so that
// a key valid on one backend is valid on all of them.
const reservedPrefix = ".strata-"

// checkKey reports whether key follows the key grammar of doc.go.
func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if len(key) > MaxKeyLength {
		return fmt.Errorf("%w: key of %d bytes is longer than %d", ErrInvalidKey, len(key), MaxKeyLength)
	}
	if err := checkKeyText(key); err != nil {
		return err
	}
	for component := range strings.SplitSeq(key, "/") {
		if err := checkComponent(key, component); err != nil {
			return err
		}
	}
	return nil
}

// checkPrefix reports whether prefix may be passed to List: the empty
// string, or a key, or a key followed by "/", or a key whose last component
// is cut short ("topic-0/0/0000"). The last component is only ever compared
// as a string, never used as a path.
func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if len(prefix) > MaxKeyLength {
		return fmt.Errorf("%w: prefix of %d bytes is longer than %d", ErrInvalidKey, len(prefix), MaxKeyLength)
	}
	if err := checkKeyText(prefix); err != nil {
		return err
	}
	dir, _ := splitPrefix(prefix)
	if dir == "" {
		if strings.HasPrefix(prefix, "/") {
			return fmt.Errorf("%w: prefix %q starts with '/'", ErrInvalidKey, prefix)
		}
		return nil
	}
	for component := range strings.SplitSeq(dir, "/") {
		if err := checkComponent(prefix, component); err != nil {
			return err
		}
	}
	return nil
}

// splitPrefix cuts a list prefix at its last '/': the directory part (a
// key, or "") and the start of the names below it.
func splitPrefix(prefix string) (dir, name string) {
	i := strings.LastIndexByte(prefix, '/')
	if i < 0 {
		return "", prefix
	}
	return prefix[:i], prefix[i+1:]
}

func checkKeyText(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidKey, s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("%w: %q holds a control character or backslash", ErrInvalidKey, s)
		}
	}
	return nil
}

func checkComponent(key, component string) error {
	switch {
	case component == "":
		return fmt.Errorf("%w: %q has an empty path component (leading, trailing or doubled '/')", ErrInvalidKey, key)
	case component == "." || component == "..":
		return fmt.Errorf("%w: %q has a %q path component", ErrInvalidKey, key, component)
	case strings.HasPrefix(component, reservedPrefix):
		return fmt.Errorf("%w: %q has a component starting with %q, which is reserved", ErrInvalidKey, key, reservedPrefix)
	case len(component) > maxComponentLength:
		return fmt.Errorf("%w: %q has a component longer than %d bytes", ErrInvalidKey, key, maxComponentLength)
	}
	return nil
}
