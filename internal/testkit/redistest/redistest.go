// Package redistest runs a real redis-server for tests: Debian's package,
// on a free loopback port, with nothing saved to disk. Stop and Start take
// it down and bring it back on the same port, as a Redis outage would. A
// test that needs one fails, never skips, when redis-server is not
// installed: scripts/test.sh installs it.
package redistest

import (
	"bytes"
	"crypto/tls"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/internal/testkit/freeport"
)

// Server is one redis-server of a test.
type Server struct {
	t    testing.TB
	bin  string
	port int
	// tls, for NewTLS: the server listens on its port with TLS only.
	tls *tlsFiles

	mu  sync.Mutex
	cmd *exec.Cmd
	out *bytes.Buffer
}

// New runs a redis-server for the test and stops it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	return start(t, nil)
}

// NewTLS runs a redis-server that speaks TLS only, with a certificate for
// 127.0.0.1 from a CA of the test's own (CAFile), and no client
// certificate asked for.
func NewTLS(t testing.TB) *Server {
	t.Helper()
	return start(t, newTLSFiles(t))
}

func start(t testing.TB, tf *tlsFiles) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH: the shared run registry's tests need a real Redis. Run scripts/test.sh, which installs it (apt-get install redis-server), or install it yourself: %v", err)
	}
	s := &Server{t: t, bin: bin, port: freePort(t), tls: tf}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// CAFile is the PEM file of the CA that signed a NewTLS server's certificate.
func (s *Server) CAFile() string {
	if s.tls == nil {
		return ""
	}
	return s.tls.ca
}

// Addr is host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Start starts the server if it is not running and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	out := &bytes.Buffer{}
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"}
	if s.tls != nil {
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(s.port),
			"--tls-cert-file", s.tls.cert, "--tls-key-file", s.tls.key, "--tls-ca-cert-file", s.tls.ca, "--tls-auth-clients", "no")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	s.cmd, s.out = cmd, out
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ping(s.Addr(), s.tls) {
			return
		}
		if time.Now().After(deadline) {
			s.stopLocked()
			s.t.Fatalf("redis-server on port %d did not answer within 10s; its output:\n%s", s.port, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server; its data is gone.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *Server) stopLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// ping sends PING in the inline protocol and looks for +PONG.
func ping(addr string, tf *tlsFiles) bool {
	var c net.Conn
	var err error
	if tf != nil {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: 200 * time.Millisecond}, "tcp", addr, &tls.Config{RootCAs: tf.pool})
	} else {
		c, err = net.DialTimeout("tcp", addr, 200*time.Millisecond)
	}
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 16)
	n, _ := c.Read(buf)
	return strings.HasPrefix(string(buf[:n]), "+PONG")
}

// freePort is a loopback port nobody listens on, for redis-server to bind.
func freePort(t testing.TB) int {
	t.Helper()
	return freeport.Port(t)
}
