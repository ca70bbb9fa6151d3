// Package egresstest lends tests a real third-party HTTP API to act on:
// Radicale, Debian's CalDAV server, with its own users (htpasswd, Basic
// auth), TLS under a certificate made for the test, and a folder of the
// test's for everything it writes. A built tool adds an event there
// through toolkit.Do, a secret and an approval, and the test reads the
// change back with its own client (docs/acting.md).
//
// It installs nothing: it finds the radicale program (Debian's package
// radicale; .ci/run installs it). Without it, a test skips on a developer's
// machine and fails where CI=true or ADAPTBOT_REQUIRE_RADICALE=1.
//
// The server listens on 127.0.0.1 only. Its certificate names Host
// (cal.example.com), which Resolver maps to 127.0.0.1, so a tool's request
// goes over HTTPS to a host name, as in use, and the secret is pinned to
// that name. It is for tests only: nothing in the binary imports it.
package egresstest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"adaptbot/toolkit"
)

// Resolver maps example.com and every name under it to 127.0.0.1, and no
// other name to anything: the tests' servers are reached by name.
type Resolver struct{}

// LookupNetIP answers for example.com names alone.
func (Resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "example.com" || strings.HasSuffix(h, ".example.com") {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host (egresstest.Resolver knows example.com names only)", Name: host, IsNotFound: true}
}

var _ toolkit.Resolver = Resolver{}

// Certificate is a self-signed TLS certificate for host names, made for one
// test: PEM files for a server, and the pool a client trusts it with.
type Certificate struct {
	CertPEM, KeyPEM []byte
	Roots           *x509.CertPool
}

// NewCertificate makes a certificate for hosts (ECDSA P-256, valid for a
// day).
func NewCertificate(hosts ...string) (*Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: hosts[0], Organization: []string{"adaptbot tests"}},
		DNSNames:              hosts,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &Certificate{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		Roots:   roots,
	}, nil
}

// ToolkitOptions are the options of a toolkit.Client that reaches the
// tests' servers by name over TLS it trusts with roots: loopback allowed,
// names resolved by Resolver.
func ToolkitOptions(roots *x509.CertPool) toolkit.Options {
	return toolkit.Options{
		Policy:   toolkit.Policy{AllowNets: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Resolver: Resolver{},
		TLS:      &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		Timeout:  10 * time.Second,
	}
}

// Basic is the credentials of a Basic Authorization header: base64 of
// user:password, what follows "Basic ".
func Basic(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// Forms are the forms of a secret's value that must not appear where it
// may not go: plain, URL-encoded, and base64 in every alphabet, of the
// value alone and of the value inside a longer text (the run of characters
// that does not depend on where it sits).
func Forms(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		out = append(out, enc.EncodeToString([]byte(v)))
		for k := 1; k < 3; k++ {
			s := enc.EncodeToString(append([]byte(strings.Repeat("x", k)), v...))
			out = append(out, s[(8*k+5)/6:8*(k+len(v))/6])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Leaks returns the forms of v (Forms) that text holds.
func Leaks(text, v string) []string {
	var out []string
	for _, f := range Forms(v) {
		if strings.Contains(text, f) {
			out = append(out, f)
		}
	}
	return out
}

// describe names a request, for an error.
func describe(method, rawURL string) string { return fmt.Sprintf("%s %s", method, rawURL) }
