package primeexporter

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/rft"
)

// errUnauthorized is what every push returns once the platform refused the
// key: a bad key is bad for every call, so retrying each batch forever
// would only flood the platform and the log.
var errUnauthorized = errors.New("the platform refused the API key (401): set a valid api_key and restart the collector")

// authGuard wraps the platform and trips on the first 401: from then on no
// call is made, the component reports a permanent error status, and the
// data is dropped (counted) until the collector is restarted.
type authGuard struct {
	platform
	logger *zap.Logger
	host   component.Host

	mu      sync.Mutex
	tripped error
}

func newAuthGuard(p platform, host component.Host, logger *zap.Logger) *authGuard {
	return &authGuard{platform: p, host: host, logger: logger}
}

// err is the refusal once tripped, as a permanent error; nil before.
func (a *authGuard) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tripped == nil {
		return nil
	}
	return consumererror.NewPermanent(a.tripped)
}

func (a *authGuard) check(err error) error {
	if rerr, ok := rft.AsError(err); ok && rerr.Class == rft.ClassUnauthorized {
		a.mu.Lock()
		first := a.tripped == nil
		if first {
			a.tripped = fmt.Errorf("%w: %s", errUnauthorized, rerr.Message)
		}
		tripped := a.tripped
		a.mu.Unlock()
		if first {
			a.logger.Error("The platform refused the API key; the exporter stops sending until the collector is restarted", zap.Error(tripped))
			componentstatus.ReportStatus(a.host, componentstatus.NewPermanentErrorEvent(tripped))
		}
	}
	return err
}

func (a *authGuard) CreateRun(ctx context.Context, req rft.CreateRunRequest) (rft.Run, error) {
	if err := a.err(); err != nil {
		return rft.Run{}, err
	}
	r, err := a.platform.CreateRun(ctx, req)
	return r, a.check(err)
}

func (a *authGuard) PostMetrics(ctx context.Context, runID string, metrics map[string]float64) error {
	if err := a.err(); err != nil {
		return err
	}
	return a.check(a.platform.PostMetrics(ctx, runID, metrics))
}

func (a *authGuard) Finalize(ctx context.Context, runID string, exitCode int) error {
	if err := a.err(); err != nil {
		return err
	}
	return a.check(a.platform.Finalize(ctx, runID, exitCode))
}

func (a *authGuard) SetStatus(ctx context.Context, runID string, status rft.Status, message string) error {
	if err := a.err(); err != nil {
		return err
	}
	return a.check(a.platform.SetStatus(ctx, runID, status, message))
}

func (a *authGuard) Presign(ctx context.Context, runID string, step int64) (rft.Presigned, error) {
	if err := a.err(); err != nil {
		return rft.Presigned{}, err
	}
	p, err := a.platform.Presign(ctx, runID, step)
	return p, a.check(err)
}

func (a *authGuard) Confirm(ctx context.Context, runID string, step int64, key string) error {
	if err := a.err(); err != nil {
		return err
	}
	return a.check(a.platform.Confirm(ctx, runID, step, key))
}
