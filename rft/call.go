package rft

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
)

// maxBody caps what is read of any response: platform answers are small,
// and an error page must not fill memory.
const maxBody = 1 << 20

// route is one platform call and its replay policy.
type route struct {
	op     string
	method string
	path   string // relative to the API prefix
	// replayable: a duplicate of the request does no harm, so it may be
	// sent again after an ambiguous failure.
	replayable bool
	// conflictIsSuccess: a 409 means the run was already closed, which is
	// what the call wanted.
	conflictIsSuccess bool
}

// exchange is one answered request.
type exchange struct {
	status   int
	header   http.Header
	body     []byte
	attempts int
}

// mayRetry is r's replay rule: a retryable failure is sent again in place
// on a replayable route, and on any other only when it proves the request
// was never processed.
func (r route) mayRetry(e *Error) bool {
	if !e.Retryable() {
		return false
	}
	return r.replayable || e.Class == ClassTransportUnsent || e.StatusCode == http.StatusTooManyRequests
}

// call sends payload as JSON on r, retrying in place as r's policy allows.
func (c *Client) call(ctx context.Context, r route, payload any) (exchange, error) {
	body, err := json.Marshal(payload) // compact UTF-8
	if err != nil {
		return exchange{}, c.refuse(r.op, "cannot encode the request as JSON: "+err.Error())
	}
	return c.send(ctx, r, c.prefix+r.path, body, true)
}

// send sends body (nil: none, as for a GET) to target, retrying in place
// as r's policy allows. The key goes as Authorization: Bearer, and also as
// x-api-key when withAPIKeyHeader (the RFT routes take both; the
// evaluations API lists only the first); Content-Type only with a body.
func (c *Client) send(ctx context.Context, r route, target string, body []byte, withAPIKeyHeader bool) (exchange, error) {
	return c.retry(ctx, r.op, c.maxAttempts, r.mayRetry, func(ctx context.Context) (exchange, *Error) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, r.method, target, rd)
		if err != nil {
			return exchange{}, c.refuse(r.op, "cannot build the request: "+err.Error())
		}
		req.Header.Set("Authorization", "Bearer "+c.key)
		if withAPIKeyHeader {
			req.Header.Set("x-api-key", c.key)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", c.userAgent)
		ex, e := c.roundTrip(c.http, req, r.op)
		if e != nil {
			return exchange{}, e
		}
		if isSuccess(ex.status) || (r.conflictIsSuccess && ex.status == http.StatusConflict) {
			return ex, nil
		}
		return exchange{}, c.statusError(r.op, ex, platformMessage)
	})
}

// roundTrip sends req once on hc and reads the answer, classifying a
// transport failure by how far the request got.
func (c *Client) roundTrip(hc *http.Client, req *http.Request, op string) (exchange, *Error) {
	var tr sendTrace
	req = req.WithContext(tr.attach(req.Context()))
	resp, err := hc.Do(req)
	if err != nil {
		return exchange{}, &Error{Op: op, Class: tr.classify(err), Err: redactTransportError(err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil && isSuccess(resp.StatusCode) {
		// The platform answered, so it processed the request; only the
		// answer is lost.
		return exchange{}, &Error{Op: op, StatusCode: resp.StatusCode, Class: ClassTransportAmbiguous, Err: err}
	}
	// Drain a little more so that the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return exchange{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// statusError builds the error of a non-success answer.
func (c *Client) statusError(op string, ex exchange, message func([]byte) string) *Error {
	e := &Error{
		Op:         op,
		StatusCode: ex.status,
		Class:      classifyStatus(ex.status),
		Message:    c.scrub(message(ex.body)),
		RetryAfter: parseRetryAfter(ex.header.Get("Retry-After"), c.now()),
	}
	if ex.status >= 300 && ex.status < 400 {
		e.Message = "redirect not followed"
		if loc := ex.header.Get("Location"); loc != "" && op != opPut {
			e.Message += " (to " + c.scrub(redactURL(loc)) + "): set the API base to the address it points to"
		}
	}
	return e
}

// protocolError is a success status whose body cannot be used.
func (c *Client) protocolError(op string, ex exchange, what string) *Error {
	return &Error{
		Op:         op,
		StatusCode: ex.status,
		Class:      ClassProtocol,
		Message:    clip(c.scrub("unusable response: " + what)),
		Attempts:   ex.attempts,
	}
}

// refuse is a request the client will not send.
func (c *Client) refuse(op, why string) *Error {
	return &Error{Op: op, Class: ClassRejected, Message: c.scrub(why)}
}

// scrub removes the API key from text that came from elsewhere: a platform
// that echoes the request must not put the key into our logs.
func (c *Client) scrub(s string) string {
	if c.key == "" {
		return s
	}
	return strings.ReplaceAll(s, c.key, "[REDACTED]")
}

func isSuccess(status int) bool { return status >= 200 && status < 300 }

// keysOf lists the keys of a JSON object body and of its objects one level
// down ("run.status"), so a protocol error can say what came back instead.
func keysOf(body []byte) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return "the body is not a JSON object"
	}
	var keys []string
	for k, v := range top {
		var inner map[string]json.RawMessage
		if json.Unmarshal(v, &inner) == nil && len(inner) > 0 {
			for ik := range inner {
				keys = append(keys, k+"."+ik)
			}
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return "the body is an empty object"
	}
	slices.Sort(keys)
	return "keys in the response: " + strings.Join(keys, ", ")
}
