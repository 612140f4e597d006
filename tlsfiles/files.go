package tlsfiles

import (
	"crypto/sha256"
	"encoding/binary"
)

// Files names the PEM files. Kafka's PEM keystore is one file holding the
// private key and the certificate chain (ssl.keystore.location with
// ssl.keystore.type=PEM); CertFile and KeyFile may name the same file.
type Files struct {
	// CertFile is the certificate chain, leaf first. Other blocks in the
	// file (a keystore's private key) are skipped.
	CertFile string
	// KeyFile is the unencrypted private key: PKCS#8, PKCS#1 or EC (SEC
	// 1). An encrypted key is refused with ErrEncryptedKey, naming the
	// openssl command that decrypts it.
	KeyFile string
	// CAFile is the trusted CAs: for a server, the CAs client certificates
	// must chain to; for a client, the CAs the server's must chain to
	// (empty: the system pool).
	CAFile string
}

// contents is what a server's files held when read.
type contents struct {
	cert, key, ca []byte
}

// read reads the files f names; the key is the certificate file's bytes
// when both name one file, and ca is nil without a CAFile.
func (f Files) read() (contents, error) {
	var c contents
	var err error
	if c.cert, err = readFile("certificate file", f.CertFile); err != nil {
		return contents{}, err
	}
	c.key = c.cert
	if f.KeyFile != f.CertFile {
		if c.key, err = readFile("key file", f.KeyFile); err != nil {
			return contents{}, err
		}
	}
	if f.CAFile != "" {
		if c.ca, err = readFile("CA file", f.CAFile); err != nil {
			return contents{}, err
		}
	}
	return c, nil
}

// sum identifies c: equal sums, the same bytes in each file.
func (c contents) sum() [sha256.Size]byte {
	h := sha256.New()
	for _, b := range [][]byte{c.cert, c.key, c.ca} {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
