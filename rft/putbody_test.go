package rft

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
)

// recordingConn is a connection that keeps what each Write was given.
type recordingConn struct {
	net.Conn
	writes [][]byte
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, append([]byte(nil), p...))
	return len(p), nil
}

func TestAConnectionTakesAPutBodyOfKnownLengthInOneWrite(t *testing.T) {
	body := newPutBody(bytes.Repeat([]byte("parquet!"), 40<<10)) // 320 KB, ten 32 KB buffers
	_, _ = body.Read(make([]byte, 4096))                         // what bufio took with the headers
	conn := &recordingConn{}
	lr := &io.LimitedReader{R: body, N: int64(len(body.b)) - 4096 - 8}

	n, err := directConn{conn}.ReadFrom(lr)
	if err != nil || n != int64(len(body.b))-4096-8 || lr.N != 0 {
		t.Fatalf("ReadFrom = %d, %v; %d left to read", n, err, lr.N)
	}
	if len(conn.writes) != 1 || !bytes.Equal(conn.writes[0], body.b[4096:len(body.b)-8]) {
		t.Fatalf("%d writes, want the body's unread bytes up to the limit in one", len(conn.writes))
	}
	if rest, _ := io.ReadAll(body); !bytes.Equal(rest, body.b[len(body.b)-8:]) {
		t.Fatalf("after it the body reads %q, want the 8 bytes past the limit", rest)
	}
}

func TestAConnectionCopiesAnyOtherReaderAsBefore(t *testing.T) {
	conn := &recordingConn{}
	n, err := directConn{conn}.ReadFrom(io.LimitReader(strings.NewReader("not a put body"), 6))
	if err != nil || n != 6 || len(conn.writes) != 1 || string(conn.writes[0]) != "not a " {
		t.Fatalf("ReadFrom = %d, %v, writes %q", n, err, conn.writes)
	}
}

func TestAPutOfMegabytesArrivesWholeThroughTheObjectClient(t *testing.T) {
	store := newFakeServer(t, always(reply{status: 200}))
	put, err := NewObjectClient("", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{BaseURL: "https://platform.invalid", APIKey: "k", PutClient: put})
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
	if err := c.Put(context.Background(), store.URL+"/bucket/step_10.parquet", body); err != nil {
		t.Fatal(err)
	}
	if got := store.requests()[0].Body; !bytes.Equal(got, body) {
		t.Fatalf("the store got %d bytes, want the %d put", len(got), len(body))
	}
}
