package tlsfiles

import (
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// outcome is what each side of a handshake saw.
type outcome struct {
	server    tls.ConnectionState
	serverErr error
	client    tls.ConnectionState
	clientErr error
}

// ok reports whether both sides completed the handshake.
func (o outcome) ok() bool { return o.serverErr == nil && o.clientErr == nil }

// handshake connects a client with clientConfig to a server with
// serverConfig over loopback. The server writes one byte after its
// handshake and the client reads it, so a client certificate the server
// refuses after the client's side of a TLS 1.3 handshake is done still
// fails the client.
func handshake(t *testing.T, serverConfig, clientConfig *tls.Config) outcome {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		state tls.ConnectionState
		err   error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		server := tls.Server(conn, serverConfig)
		err = server.Handshake()
		if err == nil {
			_, err = server.Write([]byte{1})
		}
		done <- result{server.ConnectionState(), err}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	client := tls.Client(conn, clientConfig)
	defer client.Close()
	var o outcome
	if o.clientErr = client.Handshake(); o.clientErr == nil {
		_, o.clientErr = client.Read(make([]byte, 1))
	}
	o.client = client.ConnectionState()
	r := <-done
	o.server, o.serverErr = r.state, r.err
	return o
}
