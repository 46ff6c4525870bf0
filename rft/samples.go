package rft

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Presign mints an upload slot for one step's sample object (POST
// /rft/samples/presign). Both spellings of the answer are accepted
// (presignedUrl/s3Key and presigned_url/s3_key), with or without the "data"
// envelope; an answer without a URL or a key is a protocol error naming the
// keys that came back.
//
// Replayable: it only mints a URL.
func (c *Client) Presign(ctx context.Context, runID string, step int64) (Presigned, error) {
	if runID == "" {
		return Presigned{}, c.refuse(opPresign, "the run id is empty")
	}
	ex, err := c.call(ctx, route{
		op: opPresign, method: http.MethodPost, path: "/rft/samples/presign", replayable: true,
	}, presignRequest{RunID: runID, Step: step})
	if err != nil {
		return Presigned{}, err
	}
	obj := ex.body
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(ex.body, &env) == nil && len(env.Data) > 0 && env.Data[0] == '{' {
		obj = env.Data
	}
	var resp presignResponse
	if err := json.Unmarshal(obj, &resp); err != nil {
		return Presigned{}, c.protocolError(opPresign, ex, "not a presign answer ("+keysOf(ex.body)+")")
	}
	p := Presigned{
		URL:       firstNonEmpty(resp.PresignedURL, resp.PresignedURLSnake),
		Key:       firstNonEmpty(resp.S3Key, resp.S3KeySnake),
		ExpiresIn: seconds(resp.ExpiresIn, resp.ExpiresInSnake),
	}
	switch {
	case p.URL == "" && p.Key == "":
		return Presigned{}, c.protocolError(opPresign, ex, "no presigned URL and no key ("+keysOf(ex.body)+")")
	case p.URL == "":
		return Presigned{}, c.protocolError(opPresign, ex, "no presigned URL ("+keysOf(ex.body)+")")
	case p.Key == "":
		return Presigned{}, c.protocolError(opPresign, ex, "no key ("+keysOf(ex.body)+")")
	}
	return p, nil
}

// Put uploads one Parquet object to a presigned URL through the bare client:
// no platform auth headers (the URL carries its own credentials and the
// store rejects others), no redirects. Transport failures, 5xx and 429 are
// tried up to PutAttempts times; any other answer is final.
//
// Retrying even an ambiguous failure is safe: a PUT of the same bytes to
// the same key leaves the same object.
func (c *Client) Put(ctx context.Context, presignedURL string, body []byte) error {
	if u, err := url.Parse(presignedURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		// Not echoed: the query string is a credential.
		return c.refuse(opPut, "the presigned URL is not an absolute http(s) URL")
	}
	_, err := c.retry(ctx, opPut, c.putAttempts, (*Error).Retryable, func(ctx context.Context) (exchange, *Error) {
		rb := newPutBody(body)
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, presignedURL, rb)
		if err != nil {
			return exchange{}, c.refuse(opPut, "cannot build the request")
		}
		req.ContentLength = int64(len(body))
		req.Header.Set("Content-Type", "application/parquet")
		req.Header.Set("User-Agent", c.userAgent)
		ex, e := c.roundTrip(c.put, req, opPut)
		rb.wait()
		if e != nil {
			return exchange{}, e
		}
		if isSuccess(ex.status) {
			return ex, nil
		}
		return exchange{}, c.statusError(opPut, ex, objectStoreMessage)
	})
	return err
}

// Confirm tells the platform an uploaded object is in place (POST
// /rft/samples/confirm).
//
// Replayable: a second confirm of the same key changes nothing.
func (c *Client) Confirm(ctx context.Context, runID string, step int64, key string) error {
	switch {
	case runID == "":
		return c.refuse(opConfirm, "the run id is empty")
	case key == "":
		return c.refuse(opConfirm, "the object key is empty")
	}
	_, err := c.call(ctx, route{
		op: opConfirm, method: http.MethodPost, path: "/rft/samples/confirm", replayable: true,
	}, confirmRequest{RunID: runID, Step: step, S3Key: key})
	return err
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// seconds reads the first usable expiry, a number or numeric string of
// seconds. It is advisory, so anything else is 0 rather than an error.
func seconds(raws ...json.RawMessage) time.Duration {
	for _, raw := range raws {
		if len(raw) == 0 {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			raw = json.RawMessage(s)
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || math.IsNaN(f) || f <= 0 || f > math.MaxInt64/float64(time.Second) {
			continue
		}
		return time.Duration(f * float64(time.Second))
	}
	return 0
}
