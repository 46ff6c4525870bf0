package platform

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/rft"
)

// Traces is where episode documents go when Prime Traces is on: the
// service online, the run's folder offline.
type Traces interface {
	// UploadTraces commits one batch of stamped documents (compact JSON
	// lines) for the run. A batch is content-addressed, so sending the same
	// lines again is harmless: the service answers with the first receipt.
	UploadTraces(ctx context.Context, runID, team string, lines [][]byte) error
}

// tracesContext is the provenance every batch carries; it never holds the
// run id (the documents do).
func tracesContext() map[string]any {
	return map[string]any{"source": "otelcol-prime-exporter", "run_type": "train"}
}

// OnlineTraces is the Prime Traces service.
type OnlineTraces struct {
	// c is swapped by Rekey, under uploads in flight.
	c     atomic.Pointer[rft.Traces]
	watch *outageWatch
}

var _ Traces = (*OnlineTraces)(nil)

// NewOnlineTraces wraps the service's client; its outages are logged to
// logger, configured by opts.
func NewOnlineTraces(c *rft.Traces, logger *zap.Logger, opts ...OutageOption) *OnlineTraces {
	o := &OnlineTraces{watch: newOutageWatch("Prime Traces", logger, opts...)}
	o.c.Store(c)
	return o
}

// Rekey makes later uploads with c, the service under a multi-tenant
// gateway tenant's new key.
func (o *OnlineTraces) Rekey(c *rft.Traces) { o.c.Store(c) }

func (o *OnlineTraces) UploadTraces(ctx context.Context, _, team string, lines [][]byte) error {
	return watched(o.watch, func() error {
		_, err := o.c.Load().Upload(ctx, rft.TraceBatch{Lines: lines, Team: team, Context: tracesContext()})
		return err
	})
}

// CloseIdleConnections releases the client's keep-alive connections.
func (o *OnlineTraces) CloseIdleConnections() { o.c.Load().CloseIdleConnections() }

// TracesDir is where offline mode keeps a run's Prime Traces batches.
const TracesDir = "traces"

var _ Traces = (*Offline)(nil)

// UploadTraces writes the batch's JSONL, exactly what the service would
// receive, to <run>/traces/<idempotency key>.jsonl: a later upload of the
// file is the same request, and writing it again changes nothing.
func (s *Offline) UploadTraces(_ context.Context, runID, _ string, lines [][]byte) error {
	jsonl, key, err := rft.TraceJSONL(lines)
	if err != nil {
		return err
	}
	return s.writeRunFile(runID, TracesDir, strings.TrimPrefix(key, "sha256:")+".jsonl", jsonl)
}

// TracesNotEnabled reports Prime Traces' answer for an account without it
// (403 service_not_enabled): the one refusal that moves a run's documents
// to the sample table, when nothing of the run was committed yet.
func TracesNotEnabled(err error) bool {
	rerr, ok := rft.AsError(err)
	return ok && rerr.StatusCode == http.StatusForbidden && rerr.Code == "service_not_enabled"
}
