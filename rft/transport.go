package rft

import (
	"context"
	"errors"
	"net"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
)

// sendTrace records how far one request got, so a transport failure can be
// told apart: never sent (safe to send again on any route) or sent and
// possibly processed (safe only on replayable routes). The hooks may run on
// the transport's goroutines, hence the atomics.
type sendTrace struct {
	askedConn atomic.Bool // the transport started getting a connection
	gotConn   atomic.Bool // a connection was established or reused
	wrote     atomic.Bool // the whole request was written to it
}

func (t *sendTrace) attach(ctx context.Context) context.Context {
	// WithClientTrace composes with any trace already in ctx.
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) { t.askedConn.Store(true) },
		GotConn: func(httptrace.GotConnInfo) { t.gotConn.Store(true) },
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			// A write that failed did not deliver a complete request, and a
			// server acts on complete requests only.
			if i.Err == nil {
				t.wrote.Store(true)
			}
		},
	})
}

// classify sorts a transport error of the traced request.
func (t *sendTrace) classify(err error) Class {
	switch {
	case t.wrote.Load():
		return ClassTransportAmbiguous
	case t.askedConn.Load() || t.gotConn.Load():
		// The trace is live and the request was not (fully) written.
		return ClassTransportUnsent
	case isDialError(err):
		return ClassTransportUnsent
	}
	// A transport that reports no trace events: guessing "unsent" wrongly
	// would register a second run, so assume the worst.
	return ClassTransportAmbiguous
}

// isDialError reports errors that can only happen before a connection
// exists: a failed dial (refused, connect timeout) or name resolution.
func isDialError(err error) bool {
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		return true
	}
	_, isDNS := errors.AsType[*net.DNSError](err)
	return isDNS
}

// redactTransportError strips the query string from the URL net/http puts
// into its errors: for a presigned URL it is the signature.
func redactTransportError(err error) error {
	ue, ok := errors.AsType[*url.Error](err)
	if !ok {
		return err
	}
	return &url.Error{Op: ue.Op, URL: redactURL(ue.URL), Err: ue.Err}
}
