package main

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
)

// receiver is an OTLP logs gRPC server built on pdata's own service
// definition: what it decodes is what an otlp receiver would.
type receiver struct {
	plogotlp.UnimplementedGRPCServer
	records atomic.Int64
}

func (r *receiver) Export(_ context.Context, req plogotlp.ExportRequest) (plogotlp.ExportResponse, error) {
	r.records.Add(int64(req.Logs().LogRecordCount()))
	return plogotlp.NewExportResponse(), nil
}

func TestPrebuiltBytesArriveAsOTLPExportRequests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	rcv := &receiver{}
	plogotlp.RegisterGRPCServer(srv, rcv)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)

	l, err := buildLoad(loadSpec{name: "t", shape: plainShape(t), episodes: 50, episodeBytes: 1 << 10, perRequest: 7, perStep: 20, runs: 2}, 2)
	if err != nil {
		t.Fatal(err)
	}
	retries, err := sendAll(context.Background(), ln.Addr().String(), "", l, 3)
	if err != nil || retries != 0 {
		t.Fatalf("sendAll: %d retries, %v", retries, err)
	}
	if got := rcv.records.Load(); got != 50 {
		t.Errorf("the receiver decoded %d records, want 50", got)
	}
}
