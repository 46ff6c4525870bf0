package rft

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Class sorts a failure by what the caller may do about it.
type Class int

const (
	ClassTransportUnsent    Class = iota + 1 // connection refused / DNS / connect timeout: request never sent
	ClassTransportAmbiguous                  // read timeout / reset after sending
	ClassThrottled                           // 429 and 503
	ClassGateway                             // 502, 504 (ambiguous), and any other 5xx
	ClassRejected                            // 400 and any 4xx not listed below; also requests refused before sending
	ClassUnauthorized                        // 401
	ClassForbidden                           // 403
	ClassNotFound                            // 404
	ClassConflict                            // 409 on a route where it is not a success
	ClassProtocol                            // 2xx with an unusable body, or an unexpected redirect
)

func (c Class) String() string {
	switch c {
	case ClassTransportUnsent:
		return "transport error (not sent)"
	case ClassTransportAmbiguous:
		return "transport error (ambiguous)"
	case ClassThrottled:
		return "throttled"
	case ClassGateway:
		return "gateway error"
	case ClassRejected:
		return "rejected"
	case ClassUnauthorized:
		return "unauthorized"
	case ClassForbidden:
		return "forbidden"
	case ClassNotFound:
		return "not found"
	case ClassConflict:
		return "conflict"
	case ClassProtocol:
		return "protocol error"
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// The operation names an *Error carries in Op.
const (
	opCreateRun   = "create run"
	opPostMetrics = "post metrics"
	opPresign     = "presign"
	opPut         = "put object"
	opConfirm     = "confirm"
	opFinalize    = "finalize"
	opSetStatus   = "set status"
	opTraces      = "upload traces"
)

// Error is every failure of a Client call. Its text never holds the API key
// nor a presigned URL's query string.
type Error struct {
	Op         string        // "create run", "post metrics", "presign", "put object", "confirm", "finalize", "set status", "upload traces"
	StatusCode int           // 0 for transport errors and requests refused before sending
	Class      Class         //
	Message    string        // the platform's message ({"detail"} or {"error":{"code","message"}}), or what was wrong
	Code       string        // Prime Traces only: the body's error.code, which tells a 403 service_not_enabled from a 403 forbidden; "" if none
	RetryAfter time.Duration // from Retry-After (seconds or HTTP-date), capped at 60 s; 0 if none
	Attempts   int           // requests made; 0 when refused before sending
	Err        error         // underlying transport error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("prime: ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	switch {
	case e.Class == ClassTransportUnsent:
		b.WriteString("request not sent")
	case e.Class == ClassTransportAmbiguous:
		b.WriteString("no usable response, the request may have been processed")
	case e.StatusCode != 0:
		b.WriteString(strconv.Itoa(e.StatusCode))
		if t := http.StatusText(e.StatusCode); t != "" {
			b.WriteString(" ")
			b.WriteString(t)
		}
	default:
		b.WriteString("not sent")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Attempts > 1 {
		b.WriteString(" (after ")
		b.WriteString(strconv.Itoa(e.Attempts))
		b.WriteString(" attempts)")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether trying the whole operation again later may
// succeed: transport failures, throttling and gateway errors.
func (e *Error) Retryable() bool {
	switch e.Class {
	case ClassTransportUnsent, ClassTransportAmbiguous, ClassThrottled, ClassGateway:
		return true
	}
	return false
}

// Ambiguous reports whether the platform may have processed the request
// although the call failed: the connection broke after the request was
// written, or a gateway answered (it may have forwarded the request). A 503
// counts too: it is why create run is not retried after one.
func (e *Error) Ambiguous() bool {
	switch e.Class {
	case ClassTransportAmbiguous, ClassGateway:
		return true
	}
	return e.StatusCode == http.StatusServiceUnavailable
}

// Permanent reports whether sending the same request again cannot succeed.
func (e *Error) Permanent() bool { return !e.Retryable() }

// AsError finds an *Error in err's chain.
func AsError(err error) (*Error, bool) { return errors.AsType[*Error](err) }

// classifyStatus maps a non-success status code to its class.
func classifyStatus(code int) Class {
	switch {
	case code == http.StatusTooManyRequests, code == http.StatusServiceUnavailable:
		return ClassThrottled
	case code >= 500:
		return ClassGateway
	case code == http.StatusUnauthorized:
		return ClassUnauthorized
	case code == http.StatusForbidden:
		return ClassForbidden
	case code == http.StatusNotFound:
		return ClassNotFound
	case code == http.StatusConflict:
		return ClassConflict
	case code >= 400:
		return ClassRejected
	}
	// 1xx and 3xx: the client follows no redirects, so one is a misconfigured
	// address rather than anything retrying can fix.
	return ClassProtocol
}
