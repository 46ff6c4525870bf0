package primeexporter

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/primeintellect/primeexporter/rft"
)

// retryable is the one translation from the platform's error classes to the
// collector's: permanent errors are dropped, throttling keeps the platform's
// Retry-After, everything else is retried by exporterhelper.
func retryable(err error) error {
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

// dashboardURL is <frontend>/dashboard/training/<run id>.
func dashboardURL(frontend, runID string) string {
	return strings.TrimRight(frontend, "/") + "/dashboard/training/" + url.PathEscape(runID)
}

func runDirectory(dir, runID string) string {
	return filepath.Join(dir, runID)
}

// isThrottle reports whether the platform asked to wait before retrying.
func isThrottle(err error) bool {
	rerr, ok := rft.AsError(err)
	return ok && rerr.RetryAfter > 0
}

// isPermanent reports whether retrying err can never help: the platform's
// permanent classes, or an error already marked permanent here.
func isPermanent(err error) bool {
	if consumererror.IsPermanent(err) {
		return true
	}
	rerr, ok := rft.AsError(err)
	return ok && rerr.Permanent()
}

// platformDown reports a failure of the spec's retryable rows (transport
// errors, 429, 502, 503, 504): the platform as a whole is not answering, so
// the rest of a push would fail the same way. A 500 is not among them: it
// may be about one request's body, and the other requests still go.
func platformDown(err error) bool {
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

// errorClass names an error's class for log de-duplication keys.
func errorClass(err error) string {
	if rerr, ok := rft.AsError(err); ok {
		return rerr.Class.String()
	}
	return "other"
}

// firstRetryError picks the error a partial retry carries: a permanent one
// would make exporterhelper drop the retry data, so the first retryable
// (throttling first) wins.
func firstRetryError(errs []error) error {
	for _, err := range errs {
		if !consumererror.IsPermanent(err) && isThrottle(err) {
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
