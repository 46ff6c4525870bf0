// Package freeport hands out loopback addresses for servers that a test
// starts later or in another process: a collector binary, redis-server,
// the status extension.
//
// The kernel's own choice (listening on port 0, reading the port, closing)
// is a port in the ephemeral range, and every outgoing connection on the
// machine draws its local port from that same range: between the probe's
// close and the server's bind, a client somewhere may take it, and the
// server fails with "bind: address already in use". CI saw exactly that
// with an e2e collector while other tests made thousands of requests. So
// the ports here come from below the ephemeral range, where no client is
// given a port; each is handed out once in a process (the sequence starts
// at a random place, so test binaries running side by side rarely meet)
// and each is checked free by a listen before it is handed out.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// lowest is the first port handed out: above the registered services a
// developer's machine may run (Redis's 6379, Prometheus's 9090, ...).
const lowest = 15000

// ephemeralFallback is Linux's default first ephemeral port, used when
// the kernel's setting cannot be read.
const ephemeralFallback = 32768

// Ports is a sequence of ports below the ephemeral range. The zero value
// is not ready; tests use the package's functions, which share one.
type Ports struct {
	mu         sync.Mutex
	start, end int // [start, end): the ports this sequence walks
	next       int
	handed     int
}

// process is the one sequence of a test binary, so that no two servers of
// one process are ever given the same port.
var process = sync.OnceValue(func() *Ports { return newPorts(ephemeralStart()) })

func newPorts(end int) *Ports {
	if end <= lowest+100 {
		end = ephemeralFallback
	}
	return &Ports{start: lowest, end: end, next: lowest + rand.IntN(end-lowest)}
}

// ephemeralStart reads the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return ephemeralFallback
	}
	fields := strings.Fields(string(raw))
	if len(fields) != 2 {
		return ephemeralFallback
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil {
		return ephemeralFallback
	}
	return n
}

// Next is the next port of the sequence that nothing listens on now, as
// a 127.0.0.1 address.
func (p *Ports) Next() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.handed < p.end-p.start {
		port := p.next
		p.next++
		if p.next == p.end {
			p.next = p.start
		}
		p.handed++
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // somebody's server: the next one
		}
		if err := l.Close(); err != nil {
			return "", fmt.Errorf("freeport: closing the probe on %s: %w", addr, err)
		}
		return addr, nil
	}
	return "", errors.New("freeport: every port below the ephemeral range was handed out or is in use")
}

// Next is the process's next free loopback address, for code that has no
// testing.TB (a benchmark's driver).
func Next() (string, error) { return process().Next() }

// Addr is a free loopback address ("127.0.0.1:port") for a server the
// test starts.
func Addr(t testing.TB) string {
	t.Helper()
	addr, err := Next()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// Port is Addr's port alone.
func Port(t testing.TB) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(Addr(t))
	n, _ := strconv.Atoi(port)
	return n
}
