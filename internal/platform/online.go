package platform

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/outage"
	"github.com/primeintellect/primeexporter/rft"
)

// Online is the platform's RFT API behind a guard that trips on the first
// 401: a bad key is bad for every call, so from then on no call is made,
// the component reports a permanent error status, and the caller drops
// (and counts) the data until the collector is restarted. Its outage
// watches log a long outage of the API and of object storage (package
// outage), each apart: they are different services.
type Online struct {
	c       *rft.Client
	host    component.Host
	logger  *zap.Logger
	api     *outage.Watch
	objects *outage.Watch

	mu      sync.Mutex
	tripped error
}

var (
	_ Runs    = (*Online)(nil)
	_ Objects = (*Online)(nil)
)

// NewOnline wraps c; host receives the status event when the key is
// refused; watch configures the outage watches.
func NewOnline(c *rft.Client, host component.Host, logger *zap.Logger, watch ...outage.Option) *Online {
	return &Online{
		c: c, host: host, logger: logger,
		api:     outage.New("platform API", logger, watch...),
		objects: outage.New("object storage", logger, watch...),
	}
}

// Refused is the key's refusal once tripped, as a permanent error; nil
// before.
func (o *Online) Refused() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tripped == nil {
		return nil
	}
	return consumererror.NewPermanent(o.tripped)
}

// CloseIdleConnections releases the keep-alive connections of the API and
// object clients.
func (o *Online) CloseIdleConnections() { o.c.CloseIdleConnections() }

// guard makes call unless the key was refused, and trips on a 401.
func (o *Online) guard(call func() error) error {
	if err := o.Refused(); err != nil {
		return err
	}
	err := watched(o.api, call)
	rerr, ok := rft.AsError(err)
	if !ok || rerr.Class != rft.ClassUnauthorized {
		return err
	}
	o.mu.Lock()
	first := o.tripped == nil
	if first {
		o.tripped = fmt.Errorf("%w: %s", ErrUnauthorized, rerr.Message)
	}
	tripped := o.tripped
	o.mu.Unlock()
	if first {
		// componentstatus reaches only status-watching extensions: the log
		// line is what a user without one sees.
		o.logger.Error("The platform refused the API key; the exporter stops sending until the collector is restarted", zap.Error(tripped))
		componentstatus.ReportStatus(o.host, componentstatus.NewPermanentErrorEvent(tripped))
	}
	return err
}

func (o *Online) CreateRun(ctx context.Context, req rft.CreateRunRequest, _ Origin) (run rft.Run, err error) {
	err = o.guard(func() (err error) {
		run, err = o.c.CreateRun(ctx, req)
		return err
	})
	return run, err
}

// AttachRun needs no request: the run exists, and the first metrics post
// or upload for it is the first request.
func (o *Online) AttachRun(context.Context, string, Origin) error { return o.Refused() }

func (o *Online) PostMetrics(ctx context.Context, runID string, metrics map[string]float64) error {
	return o.guard(func() error { return o.c.PostMetrics(ctx, runID, metrics) })
}

func (o *Online) Finalize(ctx context.Context, runID string, exitCode int) error {
	return o.guard(func() error { return o.c.Finalize(ctx, runID, exitCode) })
}

func (o *Online) SetStatus(ctx context.Context, runID string, status rft.Status, message string) error {
	return o.guard(func() error { return o.c.SetStatus(ctx, runID, status, message) })
}

// Store runs presign → PUT → confirm, resuming from obj: a URL still
// valid is used again, and after a successful PUT only the confirm is
// left. The PUT is not guarded: a 401 from object storage says nothing
// about the API key.
func (o *Online) Store(ctx context.Context, runID string, obj Object, body []byte, save func(Object)) error {
	now := time.Now()
	if obj.Key == "" || (!obj.Put && obj.expired(now)) {
		var p rft.Presigned
		if err := o.guard(func() (err error) {
			p, err = o.c.Presign(ctx, runID, obj.Step) // replayable: only mints a URL
			return err
		}); err != nil {
			return err
		}
		obj.URL, obj.Key, obj.PresignedAt, obj.ExpiresIn, obj.Put = p.URL, p.Key, now, p.ExpiresIn, false
		save(obj)
	}
	if !obj.Put {
		if err := watched(o.objects, func() error { return o.c.Put(ctx, obj.URL, body) }); err != nil {
			return err
		}
		obj.Put = true
		save(obj)
	}
	// Replayable: a second confirm of a key changes nothing.
	return o.guard(func() error { return o.c.Confirm(ctx, runID, obj.Step, obj.Key) })
}
