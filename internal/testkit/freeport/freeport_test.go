package freeport

import (
	"net"
	"strconv"
	"testing"
)

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPortsAreBelowTheEphemeralRangeAndNeverHandedOutTwice(t *testing.T) {
	end := ephemeralStart()
	seen := map[int]bool{}
	for range 200 {
		port := portOf(t, Addr(t))
		if port < lowest || port >= end {
			t.Fatalf("port %d is outside [%d, %d)", port, lowest, end)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
	}
}

func TestAPortSomebodyListensOnIsPassedOver(t *testing.T) {
	p := &Ports{start: lowest, end: ephemeralStart(), next: lowest + 1000}
	taken, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.next)))
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := portOf(t, addr), lowest+1001; got != want {
		t.Fatalf("Next gave port %d with %d taken; want %d", got, want-1, want)
	}
}

func TestASequenceWrapsAroundAndSaysWhenItIsSpent(t *testing.T) {
	p := &Ports{start: lowest, end: lowest + 3, next: lowest + 2}
	var got []int
	for range 3 {
		addr, err := p.Next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, portOf(t, addr))
	}
	if want := []int{lowest + 2, lowest, lowest + 1}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("ports %v, want %v", got, want)
	}
	if _, err := p.Next(); err == nil {
		t.Fatal("a spent sequence handed out a port again")
	}
}
