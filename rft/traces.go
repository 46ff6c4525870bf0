package rft

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The figures of the Prime Traces contract.
const (
	traceBatchTarget = 30 << 20  // a batch closes at this much uncompressed JSONL
	traceBatchLines  = 1_000_000 // lines per batch
	traceLineCap     = 64 << 20  // a longer line is refused, never split
	traceServerCap   = 256 << 20 // the most the service takes in one batch
)

// lineFormatEpisode is X-Prime-Line-Format for episode documents: the
// service reads each line as an episode whose member traces carry the run.
const lineFormatEpisode = "episode"

// TracesOptions configures a Traces client. The fields mean what they mean
// in Options.
type TracesOptions struct {
	URL         string                                           // the Prime Traces root, e.g. https://prime-traces.pintel.dev; /api/v1/traces is appended
	APIKey      string                                           // sent as Authorization: Bearer, nowhere else
	HTTPClient  *http.Client                                     // nil → a default client with a 5-minute timeout. Copied: its redirects are turned off
	MaxAttempts int                                              // per batch, 0 → 5; 1 = no in-place retry
	Sleep       func(ctx context.Context, d time.Duration) error // nil → a real timer honoring ctx
	Jitter      func() float64                                   // returns [0,1); nil → math/rand/v2
	Now         func() time.Time                                 // reads Retry-After dates; nil → time.Now
	UserAgent   string                                           // "" → primeexporter-rft
}

// String leaves the key out, so that printing TracesOptions cannot leak it.
func (o TracesOptions) String() string {
	return "rft.TracesOptions{URL: " + redactURL(o.URL) + ", APIKey: " + shownKey(o.APIKey) + "}"
}

// GoString does the same for %#v.
func (o TracesOptions) GoString() string { return o.String() }

func shownKey(key string) string {
	if key == "" {
		return "(none)"
	}
	return "[REDACTED]"
}

// Traces uploads episode documents to Prime Traces. It is safe for
// concurrent use.
type Traces struct {
	// c carries the key, the HTTP client and the retry policy, so that
	// Prime Traces is retried, classified and scrubbed exactly like the
	// platform.
	c        *Client
	endpoint string
}

// NewTraces checks opts and builds a Traces client. It makes no request.
func NewTraces(opts TracesOptions) (*Traces, error) {
	if strings.TrimSpace(opts.URL) == "" {
		return nil, errors.New("prime: traces URL is empty: set it to the Prime Traces address, e.g. https://prime-traces.pintel.dev")
	}
	prefix, err := NormalizeBaseURL(opts.URL)
	if be, ok := errors.AsType[*BaseURLError](err); ok {
		return nil, errors.New("prime: traces URL " + strconv.Quote(be.Value) + ": " + be.Problem)
	} else if err != nil {
		return nil, err
	}
	if strings.HasSuffix(prefix, internalPrefix) {
		return nil, errors.New("prime: traces URL " + strconv.Quote(prefix) + ": Prime Traces has no /api/internal routes")
	}
	// A batch is a bulk upload, so its default timeout is a PUT's; the
	// object client slot gets the same client, because Traces never PUTs.
	hc := withoutRedirects(opts.HTTPClient, defaultPutTimeout)
	c, err := New(Options{
		BaseURL:     prefix,
		APIKey:      opts.APIKey,
		HTTPClient:  hc,
		PutClient:   hc,
		MaxAttempts: opts.MaxAttempts,
		Sleep:       opts.Sleep,
		Jitter:      opts.Jitter,
		Now:         opts.Now,
		UserAgent:   opts.UserAgent,
	})
	if err != nil {
		return nil, err
	}
	return &Traces{c: c, endpoint: prefix + "/traces"}, nil
}

// Endpoint is the URL batches are posted to.
func (t *Traces) Endpoint() string { return t.endpoint }

// String names the client without its key.
func (t *Traces) String() string { return "rft.Traces{" + t.endpoint + "}" }

// GoString does the same for %#v.
func (t *Traces) GoString() string { return t.String() }

// CloseIdleConnections releases the keep-alive connections to Prime
// Traces; call it at shutdown.
func (t *Traces) CloseIdleConnections() { t.c.CloseIdleConnections() }

// TraceBatch is one upload: episode documents as compact JSON lines, in
// order (TraceBatches cuts them, StampRun stamps each), with the team that
// owns them ("" for a personal account) and the provenance context
// ({"source": …, "run_type": …}; never the run id).
type TraceBatch struct {
	Lines   [][]byte
	Team    string
	Context map[string]any
}

// Upload posts one batch and returns the service's receipt.
//
// The request is built once and sent as is on every attempt: the same
// multipart bytes (gzip with mtime 0, a boundary derived from the content)
// and the same Idempotency-Key, the SHA-256 of the uncompressed JSONL. That
// makes even an ambiguous replay safe, so it is retried in place on 429,
// 502, 503, 504 and every transport error, up to MaxAttempts, honouring
// Retry-After; and a later Upload of the same batch (after a restart, from
// the collector's queue) sends the same bytes and gets the first receipt.
// Anything else is final; the *Error carries the body's error.code in Code.
//
// A batch the service must refuse is refused here, before sending: no
// lines, a line that is not one JSON object in valid UTF-8, a line over
// 64 MiB, more than 1,000,000 lines or more than 256 MiB in all, a Team
// that cannot be a header, a Context JSON cannot encode.
func (t *Traces) Upload(ctx context.Context, b TraceBatch) (TraceReceipt, error) {
	req, e := t.encode(b)
	if e != nil {
		return TraceReceipt{}, e
	}
	mayRetry := func(e *Error) bool {
		switch e.Class {
		case ClassTransportUnsent, ClassTransportAmbiguous:
			return true
		}
		switch e.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	c := t.c
	ex, err := c.retry(ctx, opTraces, c.maxAttempts, mayRetry, func(ctx context.Context) (exchange, *Error) {
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(req.body))
		if err != nil {
			return exchange{}, c.refuse(opTraces, "cannot build the request: "+err.Error())
		}
		hr.Header.Set("Authorization", "Bearer "+c.key)
		hr.Header.Set("Content-Type", req.contentType)
		hr.Header.Set("Accept", "application/json")
		hr.Header.Set("User-Agent", c.userAgent)
		hr.Header.Set("Idempotency-Key", req.key)
		hr.Header.Set("X-Prime-Line-Format", lineFormatEpisode)
		if b.Team != "" {
			hr.Header.Set("X-Prime-Team-ID", b.Team)
		}
		ex, e := c.roundTrip(c.http, hr, opTraces)
		if e != nil {
			return exchange{}, e
		}
		if ex.status == http.StatusOK || ex.status == http.StatusCreated {
			return ex, nil
		}
		e = c.statusError(opTraces, ex, platformMessage)
		e.Code = clip(c.scrub(errorCode(ex.body)))
		return exchange{}, e
	})
	if err != nil {
		return TraceReceipt{}, err
	}
	var r tracesReceipt
	switch {
	case json.Unmarshal(ex.body, &r) != nil || r.UploadID == "":
		return TraceReceipt{}, c.protocolError(opTraces, ex, "no upload_id ("+keysOf(ex.body)+")")
	case r.Status != "committed":
		// Anything else would let the caller count a batch as stored that
		// the service has not committed.
		return TraceReceipt{}, c.protocolError(opTraces, ex, "status "+strconv.Quote(r.Status)+`, not "committed"`)
	}
	return TraceReceipt(r), nil
}

// tracesRequest is one batch, encoded once for all its attempts.
type tracesRequest struct {
	body        []byte
	contentType string
	key         string // Idempotency-Key
}

// encode builds the multipart body: metadata, then traces.jsonl gzipped.
func (t *Traces) encode(b TraceBatch) (tracesRequest, *Error) {
	c := t.c
	switch {
	case len(b.Lines) == 0:
		return tracesRequest{}, c.refuse(opTraces, "the batch has no lines")
	case len(b.Lines) > traceBatchLines:
		return tracesRequest{}, c.refuse(opTraces, "the batch has "+strconv.Itoa(len(b.Lines))+" lines, more than the 1,000,000 Prime Traces takes")
	case !validHeaderValue(b.Team):
		return tracesRequest{}, c.refuse(opTraces, "the team id contains control characters")
	}
	jsonl, why := joinLines(b.Lines)
	if why != "" {
		return tracesRequest{}, c.refuse(opTraces, why)
	}
	meta, err := json.Marshal(tracesMetadata{SchemaVersion: 1, Context: b.Context})
	if err != nil {
		return tracesRequest{}, c.refuse(opTraces, "cannot encode the context as JSON: "+err.Error())
	}
	digest := jsonlDigest(jsonl)

	var z bytes.Buffer
	zw := gzip.NewWriter(&z) // a zero Header.ModTime writes mtime 0
	_, _ = zw.Write(jsonl)   // a bytes.Buffer does not fail
	_ = zw.Close()

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	// A random boundary would make every replay's bytes differ; one taken
	// from the content's digest is the same each time, and collides with
	// the content no more often than a random one would.
	if boundary := "prime-traces-" + digest[:48]; !bytes.Contains(meta, []byte(boundary)) && !bytes.Contains(z.Bytes(), []byte(boundary)) {
		_ = mw.SetBoundary(boundary) // valid by construction
	}
	part, _ := mw.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {`form-data; name="metadata"`},
		"Content-Type":        {"application/json"},
	})
	_, _ = part.Write(meta)
	part, _ = mw.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {`form-data; name="traces"; filename="traces.jsonl"`},
		"Content-Type":        {"application/x-ndjson"},
		"Content-Encoding":    {"gzip"},
	})
	_, _ = part.Write(z.Bytes())
	_ = mw.Close()
	return tracesRequest{body: body.Bytes(), contentType: mw.FormDataContentType(), key: "sha256:" + digest}, nil
}

// joinLines is the JSONL the service hashes and reads: the lines, each
// compacted, joined by "\n". why names the first line it cannot send.
func joinLines(lines [][]byte) (jsonl []byte, why string) {
	var buf bytes.Buffer
	for i, line := range lines {
		n := "line " + strconv.Itoa(i)
		if len(line) > traceLineCap {
			return nil, n + " is larger than the 64 MiB Prime Traces takes"
		}
		if t := bytes.TrimSpace(line); len(t) == 0 || t[0] != '{' || !utf8.Valid(t) {
			return nil, n + " is not a JSON object in UTF-8"
		}
		if i > 0 {
			buf.WriteByte('\n')
		}
		if err := json.Compact(&buf, line); err != nil {
			return nil, n + " is not valid JSON: " + err.Error()
		}
		if buf.Len() > traceServerCap {
			return nil, "the batch is larger than the 256 MiB Prime Traces takes"
		}
	}
	return buf.Bytes(), ""
}

// TraceJSONL is the body of a batch's traces part before compression, and
// its Idempotency-Key: what an upload of lines sends and what Prime Traces
// stores. Offline mode keeps batches under their key, so that a later
// upload is the same request.
func TraceJSONL(lines [][]byte) (jsonl []byte, key string, err error) {
	jsonl, why := joinLines(lines)
	if why != "" {
		return nil, "", errors.New("prime: " + why)
	}
	return jsonl, "sha256:" + jsonlDigest(jsonl), nil
}

func jsonlDigest(jsonl []byte) string {
	sum := sha256.Sum256(jsonl)
	return hex.EncodeToString(sum[:])
}

// errorCode reads error.code of a Prime Traces error body, "" if there is
// none.
func errorCode(body []byte) string {
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil {
		return ""
	}
	return env.Error.Code
}

// TraceBatches cuts lines into batches deterministically, so that a replay
// of the same lines gives the same batches and therefore the same
// idempotency keys: a batch takes lines in order while its JSONL (the lines
// and the newlines between them) stays within 30 MiB and 1,000,000 lines,
// and closes before the line that would pass either. A line over 64 MiB is
// never split nor sent: its index is returned in tooLarge. The batches hold
// the caller's slices.
func TraceBatches(lines [][]byte) (batches [][][]byte, tooLarge []int) {
	return traceBatches(lines, traceBatchTarget, traceBatchLines, traceLineCap)
}

// traceBatches takes the limits as parameters so that tests can cut at a
// few bytes rather than allocate 30 MiB.
func traceBatches(lines [][]byte, target, maxLines, lineCap int) (batches [][][]byte, tooLarge []int) {
	var cur [][]byte
	size := 0
	for i, line := range lines {
		if len(line) > lineCap {
			tooLarge = append(tooLarge, i)
			continue
		}
		grown := size + len(line)
		if len(cur) > 0 {
			grown++ // the newline before it
		}
		if len(cur) > 0 && (grown > target || len(cur) >= maxLines) {
			batches = append(batches, cur)
			cur, grown = nil, len(line)
		}
		cur = append(cur, line)
		size = grown
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches, tooLarge
}
