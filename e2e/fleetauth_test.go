package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The shipped gateway and agent configs authenticate (docs/security.md): a
// gateway's OTLP/gRPC receiver takes TLS only and a bearer token on every
// request, and an agent sends over TLS with that token. fleetAuth writes the
// files they read, in a test's temp dir, and names them in the env vars the
// configs use.
//
// The CA's key comes from a fixed seed (Ed25519 keys and signatures are
// deterministic): a gateway and an agent started apart, each with files of
// its own, trust the same CA without passing anything between them. The key
// is a test fixture for 127.0.0.1 only.

// e2eGatewayToken is the token the e2e gateways accept and agents present.
const e2eGatewayToken = "e2e-gateway-token-7d2b9c"

// fleetAuth is one set of the fleet's credential files.
type fleetAuth struct {
	caFile, certFile, keyFile, tokenFile string
}

func seededKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("prime e2e " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

// newFleetAuth writes the CA, a server certificate for 127.0.0.1 and
// localhost, its key and the token file.
func newFleetAuth(t *testing.T) fleetAuth {
	t.Helper()
	dir := t.TempDir()
	caKey, srvKey := seededKey("ca"), seededKey("gateway")
	notBefore := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	notAfter := time.Date(2125, 1, 1, 0, 0, 0, 0, time.UTC)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "prime e2e test CA"},
		NotBefore: notBefore, NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "prime e2e gateway"},
		NotBefore: notBefore, NotAfter: notAfter,
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, ca, srvKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	a := fleetAuth{
		caFile: filepath.Join(dir, "ca.crt"), certFile: filepath.Join(dir, "tls.crt"),
		keyFile: filepath.Join(dir, "tls.key"), tokenFile: filepath.Join(dir, "token"),
	}
	writePEM(t, a.caFile, "CERTIFICATE", caDER)
	writePEM(t, a.certFile, "CERTIFICATE", srvDER)
	writePEM(t, a.keyFile, "PRIVATE KEY", keyDER)
	// The format of a mounted Secret: one token per line, the first what an
	// agent presents, anything after the token a comment.
	if err := os.WriteFile(a.tokenFile, []byte(e2eGatewayToken+" # the e2e agents\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// gatewayEnv is what a gateway's receiver reads (deploy/gateway.yaml).
func (a fleetAuth) gatewayEnv() []string {
	return []string{"PRIME_TLS_CERT_FILE=" + a.certFile, "PRIME_TLS_KEY_FILE=" + a.keyFile, "PRIME_INGEST_TOKEN_FILE=" + a.tokenFile}
}

// agentEnv is what an agent's load_balancing exporter reads
// (deploy/agent.yaml).
func (a fleetAuth) agentEnv() []string {
	return []string{"PRIME_GATEWAY_CA_FILE=" + a.caFile, "PRIME_GATEWAY_TOKEN_FILE=" + a.tokenFile}
}

// withToken is a copy whose token file holds token instead.
func (a fleetAuth) withToken(t *testing.T, token string) fleetAuth {
	t.Helper()
	a.tokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(a.tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}
