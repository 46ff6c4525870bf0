package platform

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/rft"
)

// Online is the platform's RFT API behind a guard that trips when the key
// is refused: a bad key is bad for every call, so from then on no call is
// made, the component reports a permanent error status, and the caller
// drops (and counts) the data until the collector is restarted. A 401 on a
// route trips it only once whoami (the platform's own check of a key)
// refuses the key too: a 401 may be about what one request asked for, and
// a sender who can make the platform answer one must not stop every run of
// the collector. Its outage watches log a long outage of the API and of
// object storage (outage.go), each apart: they are different services.
type Online struct {
	// c is swapped by Rekey, under calls in flight.
	c       atomic.Pointer[rft.Client]
	host    component.Host
	logger  *zap.Logger
	api     *outageWatch
	objects *outageWatch

	mu      sync.Mutex
	tripped error
	// keyOK is when whoami last accepted the key: a 401 within
	// keyConfirmed of it is the request's, without asking again.
	keyOK time.Time
	// confirming serializes the whoami calls of concurrent 401s.
	confirming sync.Mutex
	// tenant: the key is one tenant's of a multi-tenant gateway, whose
	// refusal is not the component's status (ForTenant).
	tenant bool
	// confirmFor is how long whoami's acceptance stands for the 401s that
	// follow it (keyConfirmed; none for a tenant's key).
	confirmFor time.Duration
	// refused is told once, when a tenant's key trips the guard.
	refused func()
}

// keyConfirmed is how long whoami's acceptance of the key is taken as
// current.
const keyConfirmed = 30 * time.Second

// ErrRequestUnauthorized is a 401 on one request while the platform
// accepts the key: permanent for that request's data only.
var ErrRequestUnauthorized = errors.New("the platform refused this request (401) although it accepts the API key")

var (
	_ Runs    = (*Online)(nil)
	_ Objects = (*Online)(nil)
)

// NewOnline wraps c; host receives the status event when the key is
// refused; opts configure the outage watches.
func NewOnline(c *rft.Client, host component.Host, logger *zap.Logger, opts ...OutageOption) *Online {
	o := &Online{
		host: host, logger: logger, confirmFor: keyConfirmed,
		api:     newOutageWatch("platform API", logger, opts...),
		objects: newOutageWatch("object storage", logger, opts...),
	}
	o.c.Store(c)
	return o
}

func (o *Online) client() *rft.Client { return o.c.Load() }

// ForTenant makes a refused key one tenant's matter on a multi-tenant
// gateway: it stops that tenant's data, is not reported as the
// component's status (readiness stays up while others flow), and lasts
// until the tenant sends with a key the platform accepts (Rekey). Call it
// before the first call. refused is told when the key trips the guard, so
// that the gateway can refuse the key at its receivers at once.
//
// A tenant's 401 is always confirmed with whoami, never taken as the
// request's for keyConfirmed after an acceptance: a tenant's refusal stops
// only that tenant, whom no other sender can make the platform refuse, and
// a revoked key must be told to its trainer within seconds (the gateway
// revokes it at the receiver once the guard trips).
func (o *Online) ForTenant(refused func()) *Online {
	o.tenant, o.confirmFor, o.refused = true, 0, refused
	return o
}

// Rekey makes later calls with c, the same platform under another key of
// the same user, and clears a tripped guard: on a multi-tenant gateway a
// tenant whose key was revoked sends again with a new one, and its runs go
// on under it.
func (o *Online) Rekey(c *rft.Client) {
	o.c.Store(c)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tripped != nil {
		o.logger.Info("A new key of the same user: sending again")
	}
	o.tripped, o.keyOK = nil, time.Time{}
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
func (o *Online) CloseIdleConnections() { o.client().CloseIdleConnections() }

// guard makes call unless the key was refused. A 401 trips the guard when
// the key itself is refused (keyRefused); otherwise it fails this call for
// good, and no other.
func (o *Online) guard(ctx context.Context, call func() error) error {
	if err := o.Refused(); err != nil {
		return err
	}
	return o.checkKey(ctx, watched(o.api, call))
}

// checkKey is what a guarded call does with its error: a 401 trips the
// guard when whoami refuses the key too, else it fails this call alone.
func (o *Online) checkKey(ctx context.Context, err error) error {
	rerr, ok := rft.AsError(err)
	if !ok || rerr.Class != rft.ClassUnauthorized {
		return err
	}
	if !o.keyRefused(ctx) {
		o.logger.Warn("The platform refused one request with 401 but accepts the API key; only that request's data is dropped",
			zap.String("op", rerr.Op), zap.String("message", rerr.Message))
		return consumererror.NewPermanent(fmt.Errorf("%w: %s: %s", ErrRequestUnauthorized, rerr.Op, rerr.Message))
	}
	o.mu.Lock()
	first := o.tripped == nil
	if first {
		o.tripped = fmt.Errorf("%w: %s", ErrUnauthorized, rerr.Message)
		if o.tenant {
			o.tripped = fmt.Errorf("%w: %s", ErrTenantUnauthorized, rerr.Message)
		}
	}
	tripped := o.tripped
	o.mu.Unlock()
	switch {
	case first && o.tenant:
		o.logger.Warn("The platform refused this tenant's key; its data is dropped until it sends with a key the platform accepts, and other tenants go on", zap.Error(tripped))
		if o.refused != nil {
			o.refused()
		}
	case first:
		// componentstatus reaches only status-watching extensions: the log
		// line is what a user without one sees.
		o.logger.Error("The platform refused the API key; the exporter stops sending until the collector is restarted", zap.Error(tripped))
		componentstatus.ReportStatus(o.host, componentstatus.NewPermanentErrorEvent(tripped))
	}
	return err
}

// keyRefused asks whoami whether the key itself is refused. When whoami
// cannot tell (it fails otherwise, or is not served), the 401 is taken as
// the key's, as every 401 was before whoami was asked.
func (o *Online) keyRefused(ctx context.Context) bool {
	o.confirming.Lock()
	defer o.confirming.Unlock()
	o.mu.Lock()
	fresh := !o.keyOK.IsZero() && time.Since(o.keyOK) < o.confirmFor
	o.mu.Unlock()
	if fresh {
		return false
	}
	_, err := o.client().Whoami(ctx)
	if err != nil {
		return true
	}
	o.mu.Lock()
	o.keyOK = time.Now()
	o.mu.Unlock()
	return false
}

func (o *Online) CreateRun(ctx context.Context, req rft.CreateRunRequest, _ Origin) (run rft.Run, err error) {
	err = o.guard(ctx, func() (err error) {
		run, err = o.client().CreateRun(ctx, req)
		return err
	})
	return run, err
}

// AttachRun checks that the key reaches the run before any data is taken
// into it: the contract has no route that reads a run, so it asks for a
// sample upload URL of step 0, which only mints a URL (nothing is
// uploaded or confirmed, and the viewer shows only confirmed objects). A
// run id that is not the key's user's answers 404, and the attach is
// refused before a registry record is written for it: a sender cannot
// fill the registry with ids that cost no platform call, nor attach to
// another user's run.
func (o *Online) AttachRun(ctx context.Context, runID string, _ Origin) error {
	return o.guard(ctx, func() error {
		_, err := o.client().Presign(ctx, runID, 0)
		return err
	})
}

func (o *Online) PostMetrics(ctx context.Context, runID string, metrics map[string]float64) error {
	return o.guard(ctx, func() error { return o.client().PostMetrics(ctx, runID, metrics) })
}

func (o *Online) Finalize(ctx context.Context, runID string, exitCode int) error {
	return o.guard(ctx, func() error { return o.client().Finalize(ctx, runID, exitCode) })
}

func (o *Online) SetStatus(ctx context.Context, runID string, status rft.Status, message string) error {
	return o.guard(ctx, func() error { return o.client().SetStatus(ctx, runID, status, message) })
}

// Advance takes the object through its two stages. The upload presigns
// when the object has no URL, or one about to expire, and PUTs, in one
// call; it returns the object as far as it got, with a new URL even when
// only the PUT failed, so that the next attempt PUTs to it again. After
// the PUT, the confirm (done). The presign is guarded; the PUT is not: a
// 401 from object storage says nothing about the API key.
func (o *Online) Advance(ctx context.Context, runID string, obj Object, body []byte) (Object, bool, error) {
	if !obj.Put {
		obj, err := o.upload(ctx, runID, obj, body)
		return obj, false, err
	}
	// Replayable: a second confirm of a key changes nothing.
	return obj, true, o.guard(ctx, func() error { return o.client().Confirm(ctx, runID, obj.Step, obj.Key) })
}

// upload is Advance's first stage. Each half of the one PutSample call is
// told to its own service's watch: the presign to the API's, the PUT to
// object storage's. Both are dated from the call's start, so a PUT's
// failure may be dated early by as long as its presign took.
func (o *Online) upload(ctx context.Context, runID string, obj Object, body []byte) (Object, error) {
	now := time.Now()
	var given rft.Presigned
	presign := obj.URL == "" || obj.Key == "" || obj.expired(now)
	if presign {
		if err := o.Refused(); err != nil {
			return obj, err
		}
	} else {
		given = rft.Presigned{URL: obj.URL, Key: obj.Key, ExpiresIn: obj.ExpiresIn}
	}
	apiBegun, objectsBegun := o.api.Now(), o.objects.Now()
	// Replayable: the presign only mints a URL, and a PUT of the same
	// bytes to the same key leaves the same object.
	p, err := o.client().PutSample(ctx, runID, obj.Step, given, body)
	if presign && p.URL == "" {
		// The presign failed, and nothing was PUT.
		report(o.api, apiBegun, err)
		return obj, o.checkKey(ctx, err)
	}
	if presign {
		report(o.api, apiBegun, nil)
		obj.URL, obj.Key, obj.PresignedAt, obj.ExpiresIn = p.URL, p.Key, now, p.ExpiresIn
	}
	report(o.objects, objectsBegun, err)
	obj.Put = err == nil
	return obj, err
}
