package rfttest

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
)

// tracesPath is Prime Traces' upload route. It is a host of its own in
// production, so it does not hang off the platform's API prefix.
const tracesPath = "/api/v1/traces"

// The figures of prime-traces.md.
const (
	traceLineCap   = 64 << 20  // per line
	traceBatchCap  = 256 << 20 // uncompressed JSONL per batch
	traceLinesCap  = 1_000_000 // lines per batch
	episodeFormat  = "episode" // X-Prime-Line-Format of episode documents
	traceCommitted = "committed"
)

// TraceDocument is one committed line of a Prime Traces upload.
type TraceDocument struct {
	UploadID string
	Team     string         // X-Prime-Team-ID; "" when none was sent
	Doc      map[string]any // the line decoded, numbers as json.Number
	Raw      []byte         // the line as received
}

// TraceUpload is one committed batch.
type TraceUpload struct {
	UploadID       string
	Team           string
	IdempotencyKey string         // sha256:<hex of the uncompressed JSONL>
	Context        map[string]any // the metadata's context; nil when it was left out
	Lines          int
}

// traceKey is what makes two uploads the same batch: the same content for
// the same account.
type traceKey struct{ team, digest string }

// traceUpload is the server's record of a committed batch.
type traceUpload struct {
	TraceUpload
	format string
	raw    [][]byte
	docs   []map[string]any
}

func (u *traceUpload) receipt() map[string]any {
	return map[string]any{"upload_id": u.UploadID, "status": traceCommitted, "line_count": u.Lines}
}

// traceError is a Prime Traces refusal, answered as {"error": {"code",
// "message"}} rather than the platform's {"detail"}.
type traceError struct {
	status        int
	code, message string
}

func (e *traceError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message) }

func traceRefuse(status int, code, format string, args ...any) *traceError {
	return &traceError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func traceErrorBody(code, message string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": message}}
}

// asTraceError carries a platform-style refusal of the shared decoders
// over into Prime Traces' shape.
func asTraceError(err error, code string) *traceError {
	if ae, ok := errors.AsType[*apiError](err); ok {
		return &traceError{status: ae.Status, code: code, message: ae.Detail}
	}
	return traceRefuse(http.StatusBadRequest, code, "%v", err)
}

// serveTraces handles POST /api/v1/traces.
func (s *Server) serveTraces(w http.ResponseWriter, r *http.Request, body []byte) {
	status, receipt, te := s.ingestTraces(r.Header, body)
	if te != nil {
		if te.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", "Bearer")
		}
		writeJSON(w, te.status, traceErrorBody(te.code, te.message))
		return
	}
	writeJSON(w, status, receipt)
}

// ingestTraces checks one upload and commits it, or returns the receipt of
// the batch it repeats: 201 for a commit, 200 for a repeat.
func (s *Server) ingestTraces(h http.Header, body []byte) (int, map[string]any, *traceError) {
	// Any live key: a batch is filed by team, not by the user who sent it.
	if _, err := s.authenticate(h, bearerOnly); err != nil {
		return 0, nil, traceRefuse(http.StatusUnauthorized, "unauthenticated", "invalid or missing API key (want Authorization: Bearer <key>)")
	}
	if h.Get("X-Api-Key") != "" {
		return 0, nil, traceRefuse(http.StatusBadRequest, "invalid_request", "x-api-key is the platform's header; Prime Traces takes the key as a Bearer token only")
	}
	team := h.Get("X-Prime-Team-ID")
	if s.noTraces[team] { // fixed at construction
		return 0, nil, traceRefuse(http.StatusForbidden, "service_not_enabled", "Prime Traces is not enabled for this account")
	}
	b, te := readTraceBatch(h, body)
	if te != nil {
		return 0, nil, te
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	key := traceKey{team, b.digest}
	if prev := s.traceByKey[key]; prev != nil {
		if prev.format != b.format {
			return 0, nil, traceRefuse(http.StatusConflict, "line_format_conflict",
				"these bytes were committed with line format %q", prev.format)
		}
		return http.StatusOK, prev.receipt(), nil
	}
	if b.format != episodeFormat {
		return 0, nil, traceRefuse(http.StatusBadRequest, "line_format_mismatch",
			"X-Prime-Line-Format must be %q: the fake takes episode documents only, got %q", episodeFormat, b.format)
	}
	docs, te := episodeDocuments(b.lines)
	if te != nil {
		return 0, nil, te
	}
	u := &traceUpload{
		TraceUpload: TraceUpload{
			UploadID:       fmt.Sprintf("%064x", len(s.traceUploads)+1),
			Team:           team,
			IdempotencyKey: "sha256:" + b.digest,
			Context:        b.context,
			Lines:          len(b.lines),
		},
		format: b.format,
		raw:    b.lines,
		docs:   docs,
	}
	s.traceUploads = append(s.traceUploads, u)
	s.traceByKey[key] = u
	return http.StatusCreated, u.receipt(), nil
}

// traceBatch is an upload whose envelope checked out.
type traceBatch struct {
	digest  string // lowercase hex of the uncompressed JSONL
	format  string // X-Prime-Line-Format; "" for bare traces
	context map[string]any
	lines   [][]byte
}

// readTraceBatch checks the envelope: the key's form, the two parts in
// order, the metadata, the gzip stream and the digest.
func readTraceBatch(h http.Header, body []byte) (traceBatch, *traceError) {
	digest, ok := strings.CutPrefix(h.Get("Idempotency-Key"), "sha256:")
	if !ok || !isLowerHex(digest, sha256.Size*2) {
		return traceBatch{}, traceRefuse(http.StatusBadRequest, "invalid_request", "Idempotency-Key must be sha256:<64 lowercase hex>")
	}
	mt, params, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return traceBatch{}, traceRefuse(http.StatusUnsupportedMediaType, "invalid_request", "Content-Type must be multipart/form-data with a boundary")
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])

	meta, err := mr.NextRawPart()
	if err != nil || meta.FormName() != "metadata" {
		return traceBatch{}, traceRefuse(http.StatusBadRequest, "invalid_request", "the first part must be metadata")
	}
	raw, err := io.ReadAll(meta)
	if err != nil {
		return traceBatch{}, traceRefuse(http.StatusBadRequest, "invalid_request", "metadata: %v", err)
	}
	obj, err := decodeBody(http.Header(meta.Header), raw)
	if err != nil {
		return traceBatch{}, asTraceError(err, "invalid_request")
	}
	f := newFields(obj, "metadata.")
	version := f.integer("schema_version", required)
	context := f.object("context", optional)
	if err := f.check(); err != nil {
		return traceBatch{}, asTraceError(err, "invalid_request")
	}
	switch {
	case version != 1:
		return traceBatch{}, traceRefuse(http.StatusBadRequest, "invalid_request", "metadata.schema_version must be 1, not %d", version)
	case context != nil && len(context) == 0:
		return traceBatch{}, traceRefuse(http.StatusBadRequest, "invalid_request", "metadata.context must be omitted when empty")
	}

	traces, err := mr.NextRawPart()
	switch {
	case err != nil || traces.FormName() != "traces":
		return traceBatch{}, traceRefuse(http.StatusBadRequest, "invalid_request", "the second part must be traces")
	case traces.FileName() != "traces.jsonl":
		return traceBatch{}, traceRefuse(http.StatusBadRequest, "invalid_request", "the traces part's filename must be traces.jsonl, not %q", traces.FileName())
	}
	if mt, _, err := mime.ParseMediaType(traces.Header.Get("Content-Type")); err != nil || mt != "application/x-ndjson" {
		return traceBatch{}, traceRefuse(http.StatusUnsupportedMediaType, "invalid_request", "the traces part must be application/x-ndjson")
	}
	jsonl, te := readJSONL(traces)
	if te != nil {
		return traceBatch{}, te
	}
	if _, err := mr.NextRawPart(); !errors.Is(err, io.EOF) {
		return traceBatch{}, traceRefuse(http.StatusBadRequest, "invalid_request", "the body must have exactly two parts, metadata and traces")
	}

	sum := sha256.Sum256(jsonl)
	if hex.EncodeToString(sum[:]) != digest {
		return traceBatch{}, traceRefuse(http.StatusBadRequest, "digest_mismatch", "Idempotency-Key is not the SHA-256 of the uncompressed traces")
	}
	jsonl = bytes.TrimSuffix(jsonl, []byte("\n")) // JSONL may end its last line
	if len(jsonl) == 0 {
		return traceBatch{}, traceRefuse(http.StatusBadRequest, "invalid_request", "the traces part has no lines")
	}
	return traceBatch{
		digest:  digest,
		format:  h.Get("X-Prime-Line-Format"),
		context: context,
		lines:   bytes.Split(jsonl, []byte("\n")),
	}, nil
}

// readJSONL reads the traces part, gunzipping it when its part header says
// so. A gzip mtime other than 0 is refused: it would make a replay's bytes
// differ.
func readJSONL(p *multipart.Part) ([]byte, *traceError) {
	var r io.Reader = p
	switch enc := p.Header.Get("Content-Encoding"); enc {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(p)
		if err != nil {
			return nil, traceRefuse(http.StatusBadRequest, "invalid_request", "the traces part is not gzip: %v", err)
		}
		if !zr.ModTime.IsZero() {
			return nil, traceRefuse(http.StatusBadRequest, "invalid_request", "the gzip mtime must be 0, not %v", zr.ModTime.Unix())
		}
		r = zr
	default:
		return nil, traceRefuse(http.StatusBadRequest, "invalid_request", "Content-Encoding %q is not gzip", enc)
	}
	jsonl, err := io.ReadAll(io.LimitReader(r, traceBatchCap+1))
	switch {
	case err != nil:
		return nil, traceRefuse(http.StatusBadRequest, "invalid_request", "the traces part: %v", err)
	case len(jsonl) > traceBatchCap:
		return nil, traceRefuse(http.StatusRequestEntityTooLarge, "batch_too_large", "more than %d bytes of JSONL", traceBatchCap)
	}
	return jsonl, nil
}

// episodeDocuments decodes and checks every line: one compact JSON object,
// whose member traces each carry the run id the service files them under.
func episodeDocuments(lines [][]byte) ([]map[string]any, *traceError) {
	if len(lines) > traceLinesCap {
		return nil, traceRefuse(http.StatusRequestEntityTooLarge, "batch_too_large", "%d lines, more than %d", len(lines), traceLinesCap)
	}
	asJSON := http.Header{"Content-Type": {"application/json"}}
	docs := make([]map[string]any, len(lines))
	for i, line := range lines {
		if len(line) > traceLineCap {
			return nil, traceRefuse(http.StatusBadRequest, "trace_too_large", "line %d is larger than %d bytes", i, traceLineCap)
		}
		doc, err := decodeBody(asJSON, line)
		if err != nil {
			return nil, traceRefuse(http.StatusBadRequest, "invalid_trace", "line %d is not one JSON object in UTF-8", i)
		}
		var compact bytes.Buffer
		if json.Compact(&compact, line) != nil || !bytes.Equal(compact.Bytes(), line) {
			return nil, traceRefuse(http.StatusBadRequest, "invalid_trace", "line %d is not compact JSON", i)
		}
		if te := checkMemberTraces(i, doc); te != nil {
			return nil, te
		}
		docs[i] = doc
	}
	return docs, nil
}

func checkMemberTraces(line int, doc map[string]any) *traceError {
	v, present := doc["traces"]
	if !present {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return traceRefuse(http.StatusBadRequest, "invalid_trace", "line %d: traces must be a list, not %s", line, jsonType(v))
	}
	for j, tr := range list {
		trace, _ := tr.(map[string]any)
		run, _ := trace["run"].(map[string]any)
		if id, _ := run["id"].(string); id == "" {
			return traceRefuse(http.StatusBadRequest, "invalid_trace", "line %d: traces[%d] carries no run.id", line, j)
		}
	}
	return nil
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// TraceDocuments returns every committed document, in commit order.
func (s *Server) TraceDocuments() []TraceDocument {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TraceDocument
	for _, u := range s.traceUploads {
		for i, doc := range u.docs {
			out = append(out, TraceDocument{
				UploadID: u.UploadID,
				Team:     u.Team,
				Doc:      copyJSON(doc).(map[string]any),
				Raw:      clone(u.raw[i]),
			})
		}
	}
	return out
}

// TraceUploads returns every committed batch, in commit order. A repeated
// batch is not committed again, so it is not listed twice.
func (s *Server) TraceUploads() []TraceUpload {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TraceUpload, len(s.traceUploads))
	for i, u := range s.traceUploads {
		out[i] = u.TraceUpload
		if u.Context != nil {
			out[i].Context = copyJSON(u.Context).(map[string]any)
		}
	}
	return out
}

// TraceRequests is how many requests were sent to /api/v1/traces, whatever
// their outcome: refused, faulted and repeated ones count.
func (s *Server) TraceRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Path == tracesPath {
			n++
		}
	}
	return n
}
