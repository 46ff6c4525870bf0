package rft

import (
	"context"
	"io"
	"net"
	"sync"
)

// putBody is a PUT's body: the object's bytes, read once, and a signal
// of when the transport is done with them. net/http may still be writing
// a body after the answer came (an early error answer, a cancellation),
// and Put's caller reuses the bytes for the next object as soon as Put
// returns, so Put waits for the body to be given back (wait).
type putBody struct {
	b    []byte
	off  int
	once sync.Once
	done chan struct{}
}

func newPutBody(b []byte) *putBody { return &putBody{b: b, done: make(chan struct{})} }

func (p *putBody) Read(buf []byte) (int, error) {
	if p.off == len(p.b) {
		return 0, io.EOF
	}
	n := copy(buf, p.b[p.off:])
	p.off += n
	return n, nil
}

// Close is the transport giving the body back; it always does, on every
// path.
func (p *putBody) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

func (p *putBody) wait() { <-p.done }

// writeTo writes up to n of the body's unread bytes to w in one Write, the
// way a connection's ReadFrom takes a body (directConn).
func (p *putBody) writeTo(w io.Writer, n int64) (int64, error) {
	rest := p.b[p.off:]
	if int64(len(rest)) > n {
		rest = rest[:n]
	}
	written, err := w.Write(rest)
	p.off += written
	return int64(written), err
}

// directConn is a connection to an object store that takes a PUT's body
// in one Write. net/http hands a body of known length to the connection
// as an io.LimitedReader over it, which a TCP connection copies through a
// 32 KB buffer of its own, a write a 32 KB: an object at 200 KB episodes
// is megabytes. The bytes are in memory already, so they are written
// from where they lie. Any other reader goes the connection's own way.
// Over TLS the body is encrypted in records, which copies it anyway, and
// the TLS connection above this one never calls its ReadFrom.
type directConn struct{ net.Conn }

func (c directConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if body, ok := lr.R.(*putBody); ok {
			n, err := body.writeTo(c.Conn, lr.N)
			lr.N -= n
			return n, err
		}
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// dialDirect wraps dial's connections in directConn.
func dialDirect(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return directConn{c}, nil
	}
}
