package rfttest

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Two episode documents whose member traces carry the run, as the
// contract wants them.
const (
	episodeA = `{"run":{"id":"run-1","type":"train"},"traces":[{"run":{"id":"run-1"},"step":1}]}`
	episodeB = `{"run":{"id":"run-1","type":"train"},"traces":[{"run":{"id":"run-1"},"step":2}],"reward":0.5}`
)

// traceParts is one Prime Traces upload, built as the contract describes;
// a test changes one field to break one rule.
type traceParts struct {
	metadata  string
	jsonl     string
	gzip      bool
	mtime     time.Time
	filename  string
	traceType string // the traces part's Content-Type
	reversed  bool   // traces before metadata
	extra     bool   // a third part after them
}

func validTraceParts(lines ...string) traceParts {
	return traceParts{
		metadata:  `{"schema_version":1,"context":{"source":"test","run_type":"train"}}`,
		jsonl:     strings.Join(lines, "\n"),
		gzip:      true,
		filename:  "traces.jsonl",
		traceType: "application/x-ndjson",
	}
}

func (p traceParts) encode(t *testing.T) (body []byte, contentType string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	content := []byte(p.jsonl)
	traceHeader := textproto.MIMEHeader{
		"Content-Disposition": {`form-data; name="traces"; filename="` + p.filename + `"`},
		"Content-Type":        {p.traceType},
	}
	if p.gzip {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.ModTime = p.mtime
		_, _ = zw.Write(content)
		_ = zw.Close()
		content = z.Bytes()
		traceHeader.Set("Content-Encoding", "gzip")
	}
	parts := []struct {
		header textproto.MIMEHeader
		body   []byte
	}{
		{textproto.MIMEHeader{
			"Content-Disposition": {`form-data; name="metadata"`},
			"Content-Type":        {"application/json"},
		}, []byte(p.metadata)},
		{traceHeader, content},
	}
	if p.reversed {
		parts[0], parts[1] = parts[1], parts[0]
	}
	if p.extra {
		parts = append(parts, parts[0])
	}
	for _, part := range parts {
		w, err := mw.CreatePart(part.header)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(part.body)
	}
	_ = mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

func digestOf(jsonl string) string {
	sum := sha256.Sum256([]byte(jsonl))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// uploadTraces posts p with the contract's headers; header changes them
// afterwards, "" deleting one.
func (c *client) uploadTraces(p traceParts, header map[string]string) response {
	c.t.Helper()
	body, contentType := p.encode(c.t)
	req, err := http.NewRequest(http.MethodPost, c.s.URL()+"/api/v1/traces", bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.s.APIKey())
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Idempotency-Key", digestOf(p.jsonl))
	req.Header.Set("X-Prime-Line-Format", "episode")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return c.do(req)
}

// code is error.code of a Prime Traces error body.
func (r response) code() string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &b)
	return b.Error.Code
}

func TestAnUploadIsCommittedWithItsTeamAndContext(t *testing.T) {
	s, c := start(t, Options{})
	res := c.uploadTraces(validTraceParts(episodeA, episodeB), map[string]string{"X-Prime-Team-ID": "team-1"})
	wantStatus(t, "upload", res, http.StatusCreated)
	receipt := res.json(t)
	id, _ := receipt["upload_id"].(string)
	if !isLowerHex(id, 64) || receipt["status"] != "committed" {
		t.Fatalf("receipt %s", res.body)
	}

	docs := s.TraceDocuments()
	if len(docs) != 2 || string(docs[0].Raw) != episodeA || string(docs[1].Raw) != episodeB {
		t.Fatalf("documents %+v", docs)
	}
	for _, d := range docs {
		if d.UploadID != id || d.Team != "team-1" {
			t.Errorf("document of upload %q, team %q", d.UploadID, d.Team)
		}
	}
	if got := docs[1].Doc["reward"]; got != json.Number("0.5") {
		t.Errorf("reward decoded as %#v, want json.Number", got)
	}
	want := []TraceUpload{{
		UploadID:       id,
		Team:           "team-1",
		IdempotencyKey: digestOf(episodeA + "\n" + episodeB),
		Context:        map[string]any{"source": "test", "run_type": "train"},
		Lines:          2,
	}}
	if got := s.TraceUploads(); !reflect.DeepEqual(got, want) {
		t.Errorf("uploads\n got  %+v\n want %+v", got, want)
	}
	if n := s.TraceRequests(); n != 1 {
		t.Errorf("TraceRequests() = %d", n)
	}
}

func TestAnUploadIsServedOffTheRootWhateverThePlatformPrefix(t *testing.T) {
	s, c := start(t, Options{Prefix: "/api/internal"})
	wantStatus(t, "upload", c.uploadTraces(validTraceParts(episodeA), nil), http.StatusCreated)
	req, _ := http.NewRequest(http.MethodGet, s.URL()+"/api/v1/traces", nil)
	wantStatus(t, "GET", c.do(req), http.StatusNotFound)
	if n := s.TraceRequests(); n != 2 {
		t.Errorf("TraceRequests() = %d, want both", n)
	}
}

func TestARepeatedBatchGetsItsFirstReceiptAndIsNotCommittedTwice(t *testing.T) {
	s, c := start(t, Options{})
	p := validTraceParts(episodeA)
	first := c.uploadTraces(p, nil)
	wantStatus(t, "first", first, http.StatusCreated)
	again := c.uploadTraces(p, nil)
	wantStatus(t, "again", again, http.StatusOK)
	if !bytes.Equal(first.body, again.body) {
		t.Errorf("receipts differ: %s, %s", first.body, again.body)
	}
	// Another team's identical bytes are its own batch.
	wantStatus(t, "other team", c.uploadTraces(p, map[string]string{"X-Prime-Team-ID": "team-2"}), http.StatusCreated)
	if ups := s.TraceUploads(); len(ups) != 2 || ups[0].Team != "" || ups[1].Team != "team-2" {
		t.Fatalf("uploads %+v", ups)
	}
	if n := len(s.TraceDocuments()); n != 2 {
		t.Fatalf("%d documents, want one per team", n)
	}
}

func TestTheSameBytesUnderAnotherLineFormatAreAConflict(t *testing.T) {
	s, c := start(t, Options{})
	p := validTraceParts(episodeA)
	bare := map[string]string{"X-Prime-Line-Format": ""}
	res := c.uploadTraces(p, bare)
	wantStatus(t, "bare traces first", res, http.StatusBadRequest)
	if res.code() != "line_format_mismatch" {
		t.Errorf("code %q", res.code())
	}
	wantStatus(t, "episode", c.uploadTraces(p, nil), http.StatusCreated)
	res = c.uploadTraces(p, bare)
	wantStatus(t, "bare traces after", res, http.StatusConflict)
	if res.code() != "line_format_conflict" {
		t.Errorf("code %q", res.code())
	}
	if n := len(s.TraceUploads()); n != 1 {
		t.Errorf("%d uploads", n)
	}
}

func TestAnUncompressedTracesPartIsAccepted(t *testing.T) {
	_, c := start(t, Options{})
	p := validTraceParts(episodeA)
	p.gzip = false
	wantStatus(t, "upload", c.uploadTraces(p, nil), http.StatusCreated)
}

func TestAnUploadThatBreaksARuleIsRefusedWithItsCodeAndCommitsNothing(t *testing.T) {
	noRunID := `{"run":{"id":"run-1"},"traces":[{"run":{"type":"train"}}]}`
	tests := []struct {
		name   string
		edit   func(*traceParts)
		header map[string]string
		status int
		code   string
	}{
		{"no auth", nil, map[string]string{"Authorization": ""}, 401, "unauthenticated"},
		{"another key", nil, map[string]string{"Authorization": "Bearer nope"}, 401, "unauthenticated"},
		{"the platform's key header", nil, map[string]string{"X-Api-Key": "test-key"}, 400, "invalid_request"},
		{"a team without Prime Traces", nil, map[string]string{"X-Prime-Team-ID": "no-traces"}, 403, "service_not_enabled"},
		{"a key that is not the digest", nil, map[string]string{"Idempotency-Key": digestOf("other")}, 400, "digest_mismatch"},
		{"a key in upper case", nil, map[string]string{"Idempotency-Key": strings.ToUpper(digestOf(episodeA))}, 400, "invalid_request"},
		{"no key", nil, map[string]string{"Idempotency-Key": ""}, 400, "invalid_request"},
		{"a JSON body", nil, map[string]string{"Content-Type": "application/json"}, 415, "invalid_request"},
		{"the parts reversed", func(p *traceParts) { p.reversed = true }, nil, 400, "invalid_request"},
		{"a third part", func(p *traceParts) { p.extra = true }, nil, 400, "invalid_request"},
		{"schema version 2", func(p *traceParts) { p.metadata = `{"schema_version":2}` }, nil, 400, "invalid_request"},
		{"schema version 1.0", func(p *traceParts) { p.metadata = `{"schema_version":1.0}` }, nil, 400, "invalid_request"},
		{"no schema version", func(p *traceParts) { p.metadata = `{"context":{"source":"x"}}` }, nil, 400, "invalid_request"},
		{"an empty context", func(p *traceParts) { p.metadata = `{"schema_version":1,"context":{}}` }, nil, 400, "invalid_request"},
		{"a null context", func(p *traceParts) { p.metadata = `{"schema_version":1,"context":null}` }, nil, 400, "invalid_request"},
		{"an unknown metadata key", func(p *traceParts) { p.metadata = `{"schema_version":1,"run_id":"run-1"}` }, nil, 400, "invalid_request"},
		{"another filename", func(p *traceParts) { p.filename = "t.jsonl" }, nil, 400, "invalid_request"},
		{"another part type", func(p *traceParts) { p.traceType = "application/json" }, nil, 415, "invalid_request"},
		{"a gzip mtime", func(p *traceParts) { p.mtime = time.Unix(1_700_000_000, 0) }, nil, 400, "invalid_request"},
		{"no lines", func(p *traceParts) { p.jsonl = "" }, nil, 400, "invalid_request"},
		{"a line that is not an object", func(p *traceParts) { p.jsonl = episodeA + "\n[1]" }, nil, 400, "invalid_trace"},
		{"an empty line", func(p *traceParts) { p.jsonl = episodeA + "\n\n" + episodeB }, nil, 400, "invalid_trace"},
		{"a line that is not compact", func(p *traceParts) { p.jsonl = `{"run": {"id":"run-1"}}` }, nil, 400, "invalid_trace"},
		{"a member trace without run.id", func(p *traceParts) { p.jsonl = noRunID }, nil, 400, "invalid_trace"},
		{"a member trace that is not an object", func(p *traceParts) { p.jsonl = `{"traces":[1]}` }, nil, 400, "invalid_trace"},
		{"traces that are not a list", func(p *traceParts) { p.jsonl = `{"traces":{}}` }, nil, 400, "invalid_trace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, Options{TracesDisabledTeams: []string{"no-traces"}})
			p := validTraceParts(episodeA, episodeB)
			if tt.edit != nil {
				tt.edit(&p)
			}
			res := c.uploadTraces(p, tt.header)
			wantStatus(t, "upload", res, tt.status)
			if res.code() != tt.code {
				t.Errorf("code %q, want %q; body %s", res.code(), tt.code, res.body)
			}
			if tt.status == http.StatusUnauthorized && res.header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("WWW-Authenticate = %q", res.header.Get("WWW-Authenticate"))
			}
			if strings.Contains(string(res.body), s.APIKey()) {
				t.Errorf("the answer echoes the key: %s", res.body)
			}
			if n := len(s.TraceUploads()); n != 0 {
				t.Errorf("%d uploads committed", n)
			}
		})
	}
}

func TestATracesFaultCanCarryAnErrorCode(t *testing.T) {
	s, c := start(t, Options{})
	s.Inject(RouteTraces, Fault{Status: 403, Code: "forbidden"}, Fault{Status: 503, RetryAfter: "3"})
	res := c.uploadTraces(validTraceParts(episodeA), nil)
	wantStatus(t, "first", res, http.StatusForbidden)
	if res.code() != "forbidden" || !strings.Contains(string(res.body), "injected fault") {
		t.Errorf("body %s", res.body)
	}
	res = c.uploadTraces(validTraceParts(episodeA), nil)
	wantStatus(t, "second", res, http.StatusServiceUnavailable)
	if res.header.Get("Retry-After") != "3" {
		t.Errorf("Retry-After %q", res.header.Get("Retry-After"))
	}
	if n := len(s.TraceUploads()); n != 0 {
		t.Fatalf("a fault without AfterProcessing committed %d uploads", n)
	}
	wantStatus(t, "third", c.uploadTraces(validTraceParts(episodeA), nil), http.StatusCreated)
	if n := s.TraceRequests(); n != 3 {
		t.Errorf("TraceRequests() = %d", n)
	}
}

func TestAnUploadWhoseAnswerIsLostIsCommittedOnceAndItsReplayGetsTheReceipt(t *testing.T) {
	s, c := start(t, Options{})
	s.Inject(RouteTraces, Fault{Status: 504, AfterProcessing: true})
	p := validTraceParts(episodeA)
	wantStatus(t, "lost", c.uploadTraces(p, nil), http.StatusGatewayTimeout)
	replay := c.uploadTraces(p, nil)
	wantStatus(t, "replay", replay, http.StatusOK)
	ups := s.TraceUploads()
	if len(ups) != 1 || replay.json(t)["upload_id"] != ups[0].UploadID {
		t.Fatalf("uploads %+v, replay %s", ups, replay.body)
	}
}
