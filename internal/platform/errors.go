package platform

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/rft"
)

// ErrUnauthorized is what every call returns once the platform refused the
// key.
var ErrUnauthorized = errors.New("the platform refused the API key (401): set a valid api_key and restart the collector")

// ErrTenantUnauthorized is ErrUnauthorized for one tenant's key of a
// multi-tenant gateway.
var ErrTenantUnauthorized = errors.New("the platform refused the tenant's key (401): its data is dropped until it sends with a key the platform accepts")

// Retryable is the one translation from the platform's error classes to
// the collector's: permanent errors are dropped, throttling keeps the
// platform's Retry-After, everything else is retried by exporterhelper.
func Retryable(err error) error {
	rerr, ok := rft.AsError(err)
	switch {
	case !ok:
		return err
	case rerr.Permanent():
		return consumererror.NewPermanent(err)
	case rerr.RetryAfter > 0:
		return exporterhelper.NewThrottleRetry(err, rerr.RetryAfter)
	}
	return err
}

// Permanent reports whether retrying err can never help: the platform's
// permanent classes, or an error already marked permanent.
func Permanent(err error) bool {
	if consumererror.IsPermanent(err) {
		return true
	}
	rerr, ok := rft.AsError(err)
	return ok && rerr.Permanent()
}

// Down reports a failure of the contract's retryable rows (transport
// errors, 429, 502, 503, 504): the platform as a whole is not answering, so
// the rest of a push would fail the same way. A 500 is not among them: it
// may be about one request's body, and the other requests still go.
func Down(err error) bool {
	rerr, ok := rft.AsError(err)
	if !ok {
		return false
	}
	switch rerr.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return rerr.Class == rft.ClassTransportUnsent || rerr.Class == rft.ClassTransportAmbiguous
}

// watched makes call and tells w how it went: a success ends an outage, a
// failure that says the service is down (Down) is part of one, named by
// its route ("post metrics", "presign", …). A call cut short by the
// collector's shutdown says nothing about the service.
func watched(w *outageWatch, call func() error) error {
	begun := w.Now()
	err := call()
	report(w, begun, err)
	return err
}

// report tells w how a call begun at begun went, as watched does.
func report(w *outageWatch, begun time.Time, err error) {
	switch {
	case err == nil:
		w.Succeeded()
	case Down(err) && !errors.Is(err, context.Canceled):
		rerr, _ := rft.AsError(err) // Down holds only for an *rft.Error
		w.Failed(rerr.Op, begun, err)
	}
}

// RejectReason is the reason refused data is counted under: unauthorized
// when the key itself was refused (the request that trips the 401 guard,
// as every one after it), else the caller's reason for the route.
func RejectReason(err error, otherwise reject.Reason) reject.Reason {
	if KeyRefused(err) {
		return reject.Unauthorized
	}
	return otherwise
}

// KeyRefused reports the platform's refusal of the API key (401), as the
// rft client returns it or as Online reports every call after it: no
// call can succeed until the key changes.
func KeyRefused(err error) bool {
	if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrTenantUnauthorized) {
		return true
	}
	rerr, ok := rft.AsError(err)
	return ok && rerr.Class == rft.ClassUnauthorized
}

// Class names an error's class, for log de-duplication keys.
func Class(err error) string {
	if rerr, ok := rft.AsError(err); ok {
		return rerr.Class.String()
	}
	return "other"
}

// RetryAfter is the wait the platform asked for, 0 when it asked none.
func RetryAfter(err error) time.Duration {
	if rerr, ok := rft.AsError(err); ok {
		return rerr.RetryAfter
	}
	return 0
}

// FirstRetryError picks the error a partial retry carries: a permanent one
// would make exporterhelper drop the retry data, so the first retryable
// one wins, throttling first, so that its Retry-After is kept.
func FirstRetryError(errs []error) error {
	for _, err := range errs {
		if !consumererror.IsPermanent(err) && RetryAfter(err) > 0 {
			return err
		}
	}
	for _, err := range errs {
		if !consumererror.IsPermanent(err) {
			return err
		}
	}
	return errs[0]
}
