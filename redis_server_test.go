package primeexporter

import (
	"bytes"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// redisServer is a real redis-server for the shared run registry's tests:
// Debian's package, on a free loopback port, with nothing saved to disk.
// Stop and Start take it down and bring it back on the same port, as a
// Redis outage would. A test that needs one fails, never skips, when
// redis-server is not installed: scripts/test.sh installs it.
type redisServer struct {
	t    testing.TB
	bin  string
	port int

	mu  sync.Mutex
	cmd *exec.Cmd
	out *bytes.Buffer
}

// startRedis runs a redis-server for the test and stops it when the test
// ends.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH: the shared run registry's tests need a real Redis. Run scripts/test.sh, which installs it (apt-get install redis-server), or install it yourself: %v", err)
	}
	s := &redisServer{t: t, bin: bin, port: freePort(t)}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// addr is host:port.
func (s *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// start starts the server if it is not running and waits until it answers.
func (s *redisServer) start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	out := &bytes.Buffer{}
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	s.cmd, s.out = cmd, out
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ping(s.addr()) {
			return
		}
		if time.Now().After(deadline) {
			s.stopLocked()
			s.t.Fatalf("redis-server on port %d did not answer within 10s; its output:\n%s", s.port, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop kills the server; its data is gone.
func (s *redisServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopLocked()
}

func (s *redisServer) stopLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// ping sends PING in the inline protocol and looks for +PONG.
func ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
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

// freePort asks the kernel for a loopback port nobody listens on.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
