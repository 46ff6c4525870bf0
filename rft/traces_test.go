package rft

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// Episode documents already stamped with run-1, as the fake wants them.
const (
	stampedA = `{"run":{"id":"run-1","type":"train"},"traces":[{"run":{"id":"run-1"},"n":1}]}`
	stampedB = `{"run":{"id":"run-1","type":"train"},"traces":[{"run":{"id":"run-1"},"n":2}],"reward":0.5}`
)

// newTracesTest starts a fake Prime Traces that takes testKey and a client
// for it whose sleeps are recorded and whose jitter factor is exactly 1.
func newTracesTest(t *testing.T, opts rfttest.Options, mods ...func(*TracesOptions)) (*rfttest.Server, *Traces, *sleepLog) {
	t.Helper()
	opts.APIKey = testKey
	srv := rfttest.NewServer(opts)
	t.Cleanup(srv.Close)
	sl := &sleepLog{}
	o := TracesOptions{URL: srv.URL(), APIKey: testKey, Sleep: sl.sleep, Jitter: func() float64 { return 0.5 }}
	for _, m := range mods {
		m(&o)
	}
	c, err := NewTraces(o)
	if err != nil {
		t.Fatalf("NewTraces: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return srv, c, sl
}

func batchOf(lines ...string) TraceBatch {
	b := TraceBatch{}
	for _, l := range lines {
		b.Lines = append(b.Lines, []byte(l))
	}
	return b
}

func sha256Key(jsonl string) string {
	sum := sha256.Sum256([]byte(jsonl))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// sentPart is one multipart part as it went out.
type sentPart struct {
	name, filename string
	header         map[string][]string
	body           []byte
}

// sentParts splits a recorded traces request into its parts.
func sentParts(t *testing.T, r rfttest.Request) []sentPart {
	t.Helper()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("Content-Type %q", r.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	var parts []sentPart
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return parts
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(p)
		parts = append(parts, sentPart{p.FormName(), p.FileName(), p.Header, body})
	}
}

func TestAnUploadSendsTheContractsWire(t *testing.T) {
	tests := []struct {
		name     string
		team     string
		context  map[string]any
		metadata string
	}{
		{"with team and context", "team-1", map[string]any{"source": "primeexporter", "run_type": "train"},
			`{"schema_version":1,"context":{"run_type":"train","source":"primeexporter"}}`},
		{"without either", "", nil, `{"schema_version":1}`},
		{"with an empty context", "", map[string]any{}, `{"schema_version":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c, _ := newTracesTest(t, rfttest.Options{})
			b := batchOf(stampedA, stampedB)
			b.Team, b.Context = tt.team, tt.context
			receipt, err := c.Upload(context.Background(), b)
			if err != nil {
				t.Fatalf("Upload: %v", err)
			}
			ups := srv.TraceUploads()
			if len(ups) != 1 || receipt != (TraceReceipt{UploadID: ups[0].UploadID, Status: "committed"}) {
				t.Fatalf("receipt %+v, uploads %+v", receipt, ups)
			}

			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			jsonl := stampedA + "\n" + stampedB
			wantHeaders := map[string]string{
				"Authorization":       "Bearer " + testKey,
				"X-Api-Key":           "",
				"Idempotency-Key":     sha256Key(jsonl),
				"X-Prime-Line-Format": "episode",
				"X-Prime-Team-Id":     tt.team,
			}
			for h, want := range wantHeaders {
				if got := r.Header.Get(h); got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
			if r.Method != http.MethodPost || r.Path != "/api/v1/traces" {
				t.Errorf("sent %s %s", r.Method, r.Path)
			}

			parts := sentParts(t, r)
			if len(parts) != 2 {
				t.Fatalf("%d parts", len(parts))
			}
			meta, traces := parts[0], parts[1]
			if meta.name != "metadata" || meta.header["Content-Type"][0] != "application/json" || string(meta.body) != tt.metadata {
				t.Errorf("metadata part %q %v: %s", meta.name, meta.header, meta.body)
			}
			if traces.name != "traces" || traces.filename != "traces.jsonl" ||
				traces.header["Content-Type"][0] != "application/x-ndjson" || traces.header["Content-Encoding"][0] != "gzip" {
				t.Errorf("traces part %q %q %v", traces.name, traces.filename, traces.header)
			}
			if mtime := traces.body[4:8]; !bytes.Equal(mtime, []byte{0, 0, 0, 0}) {
				t.Errorf("gzip mtime bytes %v, want 0", mtime)
			}
			zr, err := gzip.NewReader(bytes.NewReader(traces.body))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := io.ReadAll(zr); string(got) != jsonl {
				t.Errorf("JSONL\n got  %s\n want %s", got, jsonl)
			}
		})
	}
}

func TestUploadCompactsItsLinesAndHashesWhatItSends(t *testing.T) {
	srv, c, _ := newTracesTest(t, rfttest.Options{})
	if _, err := c.Upload(context.Background(), batchOf(" {\"run\": {\"id\": \"run-1\"}}\n")); err != nil {
		t.Fatal(err)
	}
	docs := srv.TraceDocuments()
	if len(docs) != 1 || string(docs[0].Raw) != `{"run":{"id":"run-1"}}` {
		t.Fatalf("documents %+v", docs)
	}
	if got := srv.Requests()[0].Header.Get("Idempotency-Key"); got != sha256Key(`{"run":{"id":"run-1"}}`) {
		t.Errorf("Idempotency-Key %s", got)
	}
}

func TestARetryAfter503SendsTheSameBytesAndKey(t *testing.T) {
	srv, c, sl := newTracesTest(t, rfttest.Options{})
	srv.Inject(rfttest.RouteTraces, rfttest.Fault{Status: 503, Code: "ingest_unavailable"})
	if _, err := c.Upload(context.Background(), batchOf(stampedA)); err != nil {
		t.Fatalf("Upload: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for _, h := range []string{"Content-Type", "Idempotency-Key"} {
		if reqs[0].Header.Get(h) != reqs[1].Header.Get(h) {
			t.Errorf("%s changed: %q → %q", h, reqs[0].Header.Get(h), reqs[1].Header.Get(h))
		}
	}
	if !bytes.Equal(reqs[0].Body, reqs[1].Body) {
		t.Error("the retry sent other bytes")
	}
	if w := sl.waits(); !slices.Equal(w, []time.Duration{time.Second}) {
		t.Errorf("waits %v, want the first backoff", w)
	}
}

func TestALaterUploadOfTheSameBatchSendsTheSameBytesAndGetsTheFirstReceipt(t *testing.T) {
	srv, c, _ := newTracesTest(t, rfttest.Options{})
	b := batchOf(stampedA, stampedB)
	b.Context = map[string]any{"source": "primeexporter", "run_type": "train"}
	first, err := c.Upload(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.Upload(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if first != again {
		t.Errorf("receipts %+v, %+v", first, again)
	}
	reqs := srv.Requests()
	if !bytes.Equal(reqs[0].Body, reqs[1].Body) || reqs[0].Header.Get("Content-Type") != reqs[1].Header.Get("Content-Type") {
		t.Error("the replay sent other bytes")
	}
	if n := len(srv.TraceUploads()); n != 1 {
		t.Errorf("%d uploads committed", n)
	}
}

func TestRetryAfterIsHonouredUpTo60Seconds(t *testing.T) {
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		status     int
		retryAfter string
		want       time.Duration
	}{
		{429, "7", 7 * time.Second},
		{503, "120", time.Minute},
		{502, now.Add(9 * time.Second).Format(http.TimeFormat), 9 * time.Second},
		{504, "", time.Second},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d %s", tt.status, tt.retryAfter), func(t *testing.T) {
			srv, c, sl := newTracesTest(t, rfttest.Options{}, func(o *TracesOptions) {
				o.Now = func() time.Time { return now }
			})
			srv.Inject(rfttest.RouteTraces, rfttest.Fault{Status: tt.status, RetryAfter: tt.retryAfter})
			if _, err := c.Upload(context.Background(), batchOf(stampedA)); err != nil {
				t.Fatalf("Upload: %v", err)
			}
			if w := sl.waits(); !slices.Equal(w, []time.Duration{tt.want}) {
				t.Errorf("waits %v, want [%v]", w, tt.want)
			}
		})
	}
}

func TestAnAnswerLostInTransitIsRetriedAndCommittedOnce(t *testing.T) {
	tests := []struct {
		name  string
		fault rfttest.Fault
	}{
		{"the connection drops before processing", rfttest.Fault{DropConnection: true}},
		{"the connection drops after processing", rfttest.Fault{DropConnection: true, AfterProcessing: true}},
		{"a gateway times out after processing", rfttest.Fault{Status: 504, AfterProcessing: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c, _ := newTracesTest(t, rfttest.Options{})
			srv.Inject(rfttest.RouteTraces, tt.fault)
			receipt, err := c.Upload(context.Background(), batchOf(stampedA))
			if err != nil {
				t.Fatalf("Upload: %v", err)
			}
			ups := srv.TraceUploads()
			if len(ups) != 1 || ups[0].UploadID != receipt.UploadID || srv.TraceRequests() != 2 {
				t.Fatalf("receipt %+v, uploads %+v, %d requests", receipt, ups, srv.TraceRequests())
			}
		})
	}
}

func TestAFinalAnswerIsNotRetriedAndCarriesItsCode(t *testing.T) {
	missingRunID := `{"traces":[{"n":1}]}`
	tests := []struct {
		name      string
		opts      rfttest.Options
		fault     *rfttest.Fault
		key       string
		line      string
		team      string
		status    int
		class     Class
		code      string
		retryable bool
	}{
		{name: "a member trace without run.id", line: missingRunID,
			status: 400, class: ClassRejected, code: "invalid_trace"},
		{name: "another key", key: "sk-other",
			status: 401, class: ClassUnauthorized, code: "unauthenticated"},
		{name: "an account without Prime Traces", opts: rfttest.Options{TracesDisabledTeams: []string{"team-x"}}, team: "team-x",
			status: 403, class: ClassForbidden, code: "service_not_enabled"},
		{name: "a key without the traces scope", fault: &rfttest.Fault{Status: 403, Code: "forbidden"},
			status: 403, class: ClassForbidden, code: "forbidden"},
		{name: "auth that cannot be checked", fault: &rfttest.Fault{Status: 401, Code: "auth_unavailable"},
			status: 401, class: ClassUnauthorized, code: "auth_unavailable"},
		{name: "another line format before", fault: &rfttest.Fault{Status: 409, Code: "line_format_conflict"},
			status: 409, class: ClassConflict, code: "line_format_conflict"},
		{name: "a 500", fault: &rfttest.Fault{Status: 500, Code: "storage_unavailable"},
			status: 500, class: ClassGateway, code: "storage_unavailable", retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c, sl := newTracesTest(t, tt.opts, func(o *TracesOptions) {
				if tt.key != "" {
					o.APIKey = tt.key
				}
			})
			if tt.fault != nil {
				srv.Inject(rfttest.RouteTraces, *tt.fault)
			}
			b := batchOf(cmp.Or(tt.line, stampedA))
			b.Team = tt.team
			_, err := c.Upload(context.Background(), b)
			e := mustError(t, err)
			if e.StatusCode != tt.status || e.Class != tt.class || e.Code != tt.code || e.Retryable() != tt.retryable {
				t.Errorf("got %d %v code %q retryable %v, want %d %v %q %v",
					e.StatusCode, e.Class, e.Code, e.Retryable(), tt.status, tt.class, tt.code, tt.retryable)
			}
			if e.Op != opTraces || e.Attempts != 1 || srv.TraceRequests() != 1 || len(sl.waits()) != 0 {
				t.Errorf("op %q, %d attempts, %d requests, waits %v", e.Op, e.Attempts, srv.TraceRequests(), sl.waits())
			}
			if !strings.Contains(e.Error(), tt.code) || strings.Contains(e.Error(), testKey) {
				t.Errorf("Error() = %q", e)
			}
		})
	}
}

func TestAnOutageIsGivenUpAfterFiveAttempts(t *testing.T) {
	srv, c, sl := newTracesTest(t, rfttest.Options{})
	srv.SetOutage(&rfttest.Fault{Status: 503, Code: "ingest_unavailable"})
	_, err := c.Upload(context.Background(), batchOf(stampedA))
	e := mustError(t, err)
	if e.Attempts != 5 || e.Class != ClassThrottled || !e.Retryable() || e.Code != "ingest_unavailable" {
		t.Errorf("got %d attempts, %v, code %q", e.Attempts, e.Class, e.Code)
	}
	if srv.TraceRequests() != 5 || len(sl.waits()) != 4 {
		t.Errorf("%d requests, waits %v", srv.TraceRequests(), sl.waits())
	}
}

func TestTheKeyNeverAppearsInAnError(t *testing.T) {
	srv, c, _ := newTracesTest(t, rfttest.Options{})
	echo := `{"error":{"code":"invalid_trace ` + testKey + `","message":"bad token ` + testKey + `"}}`
	srv.Inject(rfttest.RouteTraces, rfttest.Fault{Status: 400, Body: echo})
	_, err := c.Upload(context.Background(), batchOf(stampedA))
	e := mustError(t, err)
	for _, s := range []string{e.Error(), e.Code, e.Message, fmt.Sprintf("%+v", e)} {
		if strings.Contains(s, testKey) {
			t.Errorf("%q holds the key", s)
		}
	}
	opts := TracesOptions{URL: srv.URL(), APIKey: testKey}
	for _, s := range []string{
		fmt.Sprintf("%v", opts), fmt.Sprintf("%+v", opts), fmt.Sprintf("%#v", opts),
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c),
	} {
		if strings.Contains(s, testKey) {
			t.Errorf("%q shows the key", s)
		}
	}
}

func TestAReceiptThatIsNotACommitIsAProtocolError(t *testing.T) {
	tests := []struct{ body, says string }{
		{`{"status":"committed"}`, "no upload_id"},
		{`{"upload_id":"u-1","status":"pending"}`, `status "pending"`},
		{`<html>ok</html>`, "no upload_id"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			srv, c, _ := newTracesTest(t, rfttest.Options{})
			srv.Inject(rfttest.RouteTraces, rfttest.Fault{Status: 200, Body: tt.body})
			_, err := c.Upload(context.Background(), batchOf(stampedA))
			e := mustError(t, err)
			if e.Class != ClassProtocol || !strings.Contains(e.Error(), tt.says) {
				t.Errorf("got %v: %v", e.Class, e)
			}
		})
	}
}

func TestUploadRefusesABatchItCannotSendWithoutSendingIt(t *testing.T) {
	tests := []struct {
		name  string
		batch TraceBatch
		says  string
	}{
		{"no lines", TraceBatch{}, "no lines"},
		{"a line that is not an object", batchOf(stampedA, `[1]`), "line 1 is not a JSON object"},
		{"an empty line", batchOf(""), "line 0 is not a JSON object"},
		{"a line that is not JSON", batchOf(`{"a":}`), "line 0 is not valid JSON"},
		{"two documents on a line", batchOf(`{} {}`), "line 0 is not valid JSON"},
		{"a line that is not UTF-8", batchOf("{\"a\":\"\xff\"}"), "UTF-8"},
		{"a team that cannot be a header", TraceBatch{Lines: [][]byte{[]byte(stampedA)}, Team: "t\n1"}, "team id"},
		{"a context JSON cannot carry", TraceBatch{Lines: [][]byte{[]byte(stampedA)}, Context: map[string]any{"x": math.NaN()}}, "context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c, _ := newTracesTest(t, rfttest.Options{})
			_, err := c.Upload(context.Background(), tt.batch)
			e := mustError(t, err)
			if e.Class != ClassRejected || e.Attempts != 0 || !strings.Contains(e.Error(), tt.says) {
				t.Errorf("got %v, %d attempts: %v", e.Class, e.Attempts, e)
			}
			if n := srv.TraceRequests(); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

func TestNewTracesRefusesOptionsItCannotWorkWith(t *testing.T) {
	tests := []struct {
		name string
		opts TracesOptions
		says string
	}{
		{"no URL", TracesOptions{APIKey: testKey}, "traces URL is empty"},
		{"a relative URL", TracesOptions{URL: "prime-traces.pintel.dev", APIKey: testKey}, "traces URL"},
		{"credentials in the URL", TracesOptions{URL: "https://u:" + testKey + "@h", APIKey: testKey}, "credentials"},
		{"the internal prefix", TracesOptions{URL: "https://h/api/internal", APIKey: testKey}, "/api/internal"},
		{"no key", TracesOptions{URL: "https://h"}, "API key is empty"},
		{"a key with a newline", TracesOptions{URL: "https://h", APIKey: testKey + "\n"}, "control characters"},
		{"negative attempts", TracesOptions{URL: "https://h", APIKey: testKey, MaxAttempts: -1}, "MaxAttempts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewTraces(tt.opts)
			if err == nil {
				t.Fatalf("NewTraces succeeded: %v", c)
			}
			if !strings.Contains(err.Error(), tt.says) || strings.Contains(err.Error(), testKey) {
				t.Errorf("error %q, want it to say %q without the key", err, tt.says)
			}
		})
	}
}

func TestNewTracesPostsUnderAPIv1WhicheverWayTheURLIsSpelt(t *testing.T) {
	for _, u := range []string{"https://prime-traces.pintel.dev", "https://prime-traces.pintel.dev/", "https://prime-traces.pintel.dev/api/v1"} {
		c, err := NewTraces(TracesOptions{URL: u, APIKey: testKey})
		if err != nil {
			t.Fatal(err)
		}
		if c.Endpoint() != "https://prime-traces.pintel.dev/api/v1/traces" {
			t.Errorf("%s: Endpoint() = %q", u, c.Endpoint())
		}
	}
}

func TestStampedAndBatchedDocumentsAreAcceptedAndFiledUnderThePlatformRun(t *testing.T) {
	srv, c, _ := newTracesTest(t, rfttest.Options{})
	var lines [][]byte
	for step := range 5 {
		doc := fmt.Sprintf(`{"run":{"type":"train","id":"rl-7","work":{"step":%d}},"traces":[{"n":1},{"run":{"id":"rl-7"}}]}`, step)
		stamped, err := StampRun([]byte(doc), "run-1", "train")
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, stamped)
	}
	batches, tooLarge := traceBatches(lines, 2*len(lines[0])+1, 100, 1<<20)
	if len(batches) != 3 || len(tooLarge) != 0 {
		t.Fatalf("%d batches, too large %v", len(batches), tooLarge)
	}
	for _, b := range batches {
		if _, err := c.Upload(context.Background(), TraceBatch{Lines: b}); err != nil {
			t.Fatal(err)
		}
	}
	docs := srv.TraceDocuments()
	if len(docs) != 5 {
		t.Fatalf("%d documents", len(docs))
	}
	for i, d := range docs {
		run := d.Doc["run"].(map[string]any)
		if run["id"] != "run-1" || run["trainer_run_id"] != "rl-7" {
			t.Errorf("document %d: run %v", i, run)
		}
	}
}

func TestTraceBatchesCutAtTheLimitsAndAlwaysTheSameWay(t *testing.T) {
	lines := func(sizes ...int) [][]byte {
		var out [][]byte
		for i, n := range sizes {
			out = append(out, bytes.Repeat([]byte{byte('a' + i)}, n))
		}
		return out
	}
	tests := []struct {
		name     string
		sizes    []int
		target   int
		maxLines int
		lineCap  int
		want     [][]int // line indexes per batch
		tooLarge []int
	}{
		{"everything fits one batch", []int{3, 3, 3}, 100, 10, 50, [][]int{{0, 1, 2}}, nil},
		// 4+1+4 = 9 fits 9 exactly; the next line would make 14.
		{"a batch closes at the target, newlines counted", []int{4, 4, 4}, 9, 10, 50, [][]int{{0, 1}, {2}}, nil},
		{"one byte past the target closes it", []int{4, 5, 4}, 9, 10, 50, [][]int{{0}, {1}, {2}}, nil},
		{"a batch closes at the line limit", []int{1, 1, 1, 1, 1}, 100, 2, 50, [][]int{{0, 1}, {2, 3}, {4}}, nil},
		{"a line over the target goes alone", []int{2, 20, 2}, 9, 10, 50, [][]int{{0}, {1}, {2}}, nil},
		{"a line over the cap is refused, not split", []int{2, 51, 2, 50}, 100, 10, 50, [][]int{{0, 2, 3}}, []int{1}},
		{"only lines over the cap", []int{60, 70}, 100, 10, 50, nil, []int{0, 1}},
		{"no lines", nil, 100, 10, 50, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := lines(tt.sizes...)
			batches, tooLarge := traceBatches(in, tt.target, tt.maxLines, tt.lineCap)
			var want [][][]byte
			for _, idx := range tt.want {
				var b [][]byte
				for _, i := range idx {
					b = append(b, in[i])
				}
				want = append(want, b)
			}
			if !reflect.DeepEqual(batches, want) || !slices.Equal(tooLarge, tt.tooLarge) {
				t.Errorf("got %q, too large %v; want %q, %v", batches, tooLarge, want, tt.tooLarge)
			}
			again, tooLargeAgain := traceBatches(in, tt.target, tt.maxLines, tt.lineCap)
			if !reflect.DeepEqual(again, batches) || !slices.Equal(tooLargeAgain, tooLarge) {
				t.Error("the same lines were cut differently")
			}
		})
	}
}

func TestTraceBatchesUsesTheContractsFigures(t *testing.T) {
	if traceBatchTarget != 30<<20 || traceBatchLines != 1_000_000 || traceLineCap != 64<<20 {
		t.Fatalf("limits %d, %d, %d", traceBatchTarget, traceBatchLines, traceLineCap)
	}
	batches, tooLarge := TraceBatches([][]byte{[]byte(stampedA), []byte(stampedB)})
	if len(batches) != 1 || len(batches[0]) != 2 || tooLarge != nil {
		t.Errorf("got %d batches, too large %v", len(batches), tooLarge)
	}
}
