package tlsfiles

import (
	"crypto/tls"
	"fmt"
	"time"
)

// Client builds a client-side *tls.Config: CA pool from CAFile (or system),
// client certificate from CertFile/KeyFile when given (both or neither),
// MinVersion TLS 1.2, ServerName from serverName when not empty (else
// crypto/tls takes it from the address dialled). The files are read once.
func Client(f Files, serverName string) (*tls.Config, error) {
	config := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if f.CAFile != "" {
		pool, err := readPool(f.CAFile)
		if err != nil {
			return nil, err
		}
		config.RootCAs = pool
	}
	switch {
	case f.CertFile == "" && f.KeyFile == "":
		return config, nil
	case f.CertFile == "" || f.KeyFile == "":
		return nil, fmt.Errorf("%w: a client certificate needs both the certificate and the key file (a keystore file names both), or neither", ErrMissingFile)
	}
	c, err := Files{CertFile: f.CertFile, KeyFile: f.KeyFile}.read()
	if err != nil {
		return nil, err
	}
	cert, err := keyPair(f.CertFile, c.cert, f.KeyFile, c.key, time.Now())
	if err != nil {
		return nil, err
	}
	config.Certificates = []tls.Certificate{cert}
	return config, nil
}
