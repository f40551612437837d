package biditest

import (
	"crypto/tls"
	"crypto/x509"
)

// leafOf returns the parsed leaf of c, parsing it when c.Leaf is unset.
func leafOf(c *tls.Certificate) *x509.Certificate {
	if c.Leaf != nil {
		return c.Leaf
	}
	if len(c.Certificate) == 0 {
		return nil
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
}
