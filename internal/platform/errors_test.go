package platform

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/consumer/consumererror"

	"github.com/primeintellect/primeexporter/rft"
)

func TestPlatformErrorsTranslateToTheCollectorsClasses(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		permanent  bool
		down       bool
		retryAfter time.Duration
	}{
		{"a 400 is dropped", &rft.Error{StatusCode: 400, Class: rft.ClassRejected}, true, false, 0},
		{"a 401 is dropped", &rft.Error{StatusCode: 401, Class: rft.ClassUnauthorized}, true, false, 0},
		{"a 403 is dropped", &rft.Error{StatusCode: 403, Class: rft.ClassForbidden}, true, false, 0},
		{"a 429 with Retry-After throttles", &rft.Error{StatusCode: 429, Class: rft.ClassThrottled, RetryAfter: 7 * time.Second}, false, true, 7 * time.Second},
		{"a 503 says the platform is down", &rft.Error{StatusCode: 503, Class: rft.ClassThrottled}, false, true, 0},
		{"a 500 is retried but the rest of the push still goes", &rft.Error{StatusCode: 500, Class: rft.ClassGateway}, false, false, 0},
		{"a refused connection says the platform is down", &rft.Error{Class: rft.ClassTransportUnsent}, false, true, 0},
		{"a lost answer says the platform is down", fmt.Errorf("run k: %w", &rft.Error{Class: rft.ClassTransportAmbiguous}), false, true, 0},
		{"an error of the collector's own is left alone", errors.New("storage full"), false, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.permanent, Permanent(tt.err))
			assert.Equal(t, tt.permanent, consumererror.IsPermanent(Retryable(tt.err)))
			assert.Equal(t, tt.down, Down(tt.err))
			assert.Equal(t, tt.retryAfter, RetryAfter(tt.err))
			if tt.retryAfter > 0 {
				assert.Contains(t, Retryable(tt.err).Error(), "Throttle")
			}
		})
	}
}

func TestAPartialRetryCarriesARetryableErrorThrottlingFirst(t *testing.T) {
	permanent := consumererror.NewPermanent(errors.New("bad body"))
	plain := &rft.Error{StatusCode: 502, Class: rft.ClassGateway}
	throttled := &rft.Error{StatusCode: 429, Class: rft.ClassThrottled, RetryAfter: time.Second}
	assert.Same(t, throttled, FirstRetryError([]error{permanent, plain, throttled}))
	assert.Same(t, plain, FirstRetryError([]error{permanent, plain}))
	assert.Equal(t, permanent, FirstRetryError([]error{permanent}))
}
