package loopbackcert

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"testing"
	"time"
)

// TestNew checks the certificate's names, validity and self-signature,
// then that a TLS client trusting only it completes a handshake with a
// server presenting it, by IP address and by name.
func TestNew(t *testing.T) {
	cert, err := New("example")
	if err != nil {
		t.Fatal(err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		t.Fatal("Leaf is nil")
	}
	if got := leaf.Subject.CommonName; got != "example server" {
		t.Errorf("CommonName = %q, want %q", got, "example server")
	}
	if got := leaf.Subject.Organization; len(got) != 1 || got[0] != "example" {
		t.Errorf("Organization = %q, want [example]", got)
	}
	now := time.Now()
	if now.Before(leaf.NotBefore) || now.Add(6*24*time.Hour).After(leaf.NotAfter) {
		t.Errorf("valid %v to %v, want now and for six days more", leaf.NotBefore, leaf.NotAfter)
	}
	if err := leaf.CheckSignatureFrom(leaf); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	other, err := New("example")
	if err != nil {
		t.Fatal(err)
	}
	if leaf.SerialNumber.Cmp(other.Leaf.SerialNumber) == 0 {
		t.Error("two certificates share a serial number")
	}

	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Read until the client closes: the handshake runs first.
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, name := range []string{"127.0.0.1", "localhost"} {
		c, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", port), &tls.Config{RootCAs: pool, ServerName: name})
		if err != nil {
			t.Errorf("handshake with ServerName %q: %v", name, err)
			continue
		}
		c.Close()
	}
}
