package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// exportMethod is OTLP's logs export over gRPC.
const exportMethod = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"

// rawCodec sends a request's prebuilt protobuf bytes as they are and drops
// the response (an ExportLogsServiceResponse the load does not act on): no
// encoding happens while the clock runs. Named "proto", so the wire is
// exactly an OTLP client's.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec sends *[]byte, not %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal([]byte, any) error { return nil }
func (rawCodec) Name() string                { return "proto" }

// sendAll sends every request of l to the otlp receiver at addr from
// senders goroutines, each with its own connection as separate trainers
// would have, taking requests in plan order. A refusal the OTLP spec calls
// retryable is retried after a pause and counted; any other error ends the
// load.
func sendAll(ctx context.Context, addr, bearer string, l *load, senders int) (retries int64, err error) {
	if bearer != "" {
		// Every request carries the key, as an SDK's exporter with
		// OTEL_EXPORTER_OTLP_HEADERS sends it.
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bearer)
	}
	var next, retried atomic.Int64
	errs := make([]error, senders)
	var wg sync.WaitGroup
	for s := range senders {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		wg.Go(func() {
			var reply []byte
			for {
				i := int(next.Add(1) - 1)
				if i >= len(l.requests) || ctx.Err() != nil {
					return
				}
				for {
					err := conn.Invoke(ctx, exportMethod, &l.requests[i], &reply, grpc.ForceCodec(rawCodec{}))
					if err == nil {
						break
					}
					if !retryable(err) || ctx.Err() != nil {
						errs[s] = fmt.Errorf("request %d: %w", i, err)
						return
					}
					retried.Add(1)
					time.Sleep(20 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return retried.Load(), err
		}
	}
	return retried.Load(), nil
}

// retryable are the gRPC codes OTLP clients retry.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded, codes.OutOfRange, codes.DataLoss, codes.Canceled:
		return true
	}
	return false
}
