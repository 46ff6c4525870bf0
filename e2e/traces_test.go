package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The Prime Traces tests send verifiers Episode.to_record() documents
// (testdata/verifiers-episode/episode.json with its id, its trace's id and
// its run.work.step varied) as prime.episode records to the built collector,
// with the exporter's traces sink on against the fake platform's Prime
// Traces endpoint, and check what was committed there and what landed in
// the sample table: the routing (exclusive, both), the fallback to the table
// for an account without Prime Traces and for nothing else, and exactly-once
// delivery through lost answers, an outage and a kill -9.

const (
	tracesTeam         = "team-e2e"
	tracesStepInterval = 5             // steps 5, 10, 15, … carry rows
	tracesTrainerRunID = "prl-run-abc" // the fixture's own run.id
	tracesBaseTime     = int64(1767225600000000000)
	tracesFallbackLine = "Prime Traces is not enabled for this account"
	counterTraceDocs   = "otelcol_exporter_prime_trace_documents_uploaded"
)

// tracesConfig is an online collector with Prime Traces on: the routing
// from the environment, short grace and retries, one queue consumer (a
// run's batches in order), and its own metrics served for the counters.
// persistent adds file_storage for the run registry and the queue, as the
// recommended config of docs/operations.md does.
func tracesConfig(t *testing.T, persistent bool) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Team: tracesTeam, Storage: persistent, FinalizeGrace: "2s", StepInterval: strconv.Itoa(tracesStepInterval),
		Traces: true, TracesRouting: "${env:PRIME_TRACES_ROUTING}", LogsOnly: true, SelfMetrics: true,
		Retry: &retryParams{InitialInterval: "200ms", MaxInterval: "1s"},
		Queue: queueParams{Enabled: true, NumConsumers: 1, FlushTimeout: "150ms"},
	})
}

// tracesRig is one fake platform and the collector config pointed at it.
type tracesRig struct {
	t           *testing.T
	otelcol     string
	platform    *rfttest.Server
	config      string
	env         []string
	metricsPort string
	runKey      string
	template    string
	next        int64 // the next record's timestamp
}

func newTracesRig(t *testing.T, opts rfttest.Options, routing string, persistent bool) *tracesRig {
	t.Helper()
	otelcol, _ := binaries(t)
	if _, err := os.Stat(otelcol); err != nil {
		t.Fatalf("PRIME_OTELCOL=%s is not a built collector (%v): build it with ocb (bash scripts/test.sh)", otelcol, err)
	}
	tpl, err := os.ReadFile(filepath.Join("testdata", "verifiers-episode", "episode.json"))
	if err != nil {
		t.Fatal(err)
	}
	opts.APIKey = e2eKey
	opts.AllowedTeams = []string{tracesTeam}
	platform := rfttest.NewServer(opts)
	t.Cleanup(platform.Close)
	_, metricsPort, _ := strings.Cut(freeAddr(t), ":")
	r := &tracesRig{
		t: t, otelcol: otelcol, platform: platform, config: tracesConfig(t, persistent), metricsPort: metricsPort,
		runKey: "traces-run", template: string(tpl), next: tracesBaseTime,
	}
	r.env = []string{
		"PRIME_OTLP_HTTP=" + freeAddr(t), "PRIME_METRICS_PORT=" + metricsPort,
		"PRIME_API_BASE=" + platform.BaseURL(), "PRIME_API_KEY=" + e2eKey,
		"PRIME_TRACES_URL=" + platform.URL(), "PRIME_TRACES_ROUTING=" + routing,
	}
	if persistent {
		r.env = append(r.env, "PRIME_STORAGE_DIR="+t.TempDir())
	}
	return r
}

// start runs a collector on the rig's config; a second start after a kill
// uses the same ports and storage.
func (r *tracesRig) start() *collector {
	r.t.Helper()
	return startCollector(r.t, r.otelcol, r.config, r.env...)
}

func (r *tracesRig) stamp() int64 {
	ts := r.next
	r.next += int64(time.Second)
	return ts
}

// tracesDoc is one episode document as sent.
type tracesDoc struct {
	id   string
	step int64
	time int64 // the record's time_unix_nano
	text string
}

// doc is the fixture with its id, its trace's id and its work step
// replaced, and a timestamp of its own.
func (r *tracesRig) doc(id string, step int64) tracesDoc {
	r.t.Helper()
	text := r.template
	for _, rep := range [][2]string{
		{`"id": "9b2e4f6a8c0d1e3f5a7b9c1d3e5f7a9b"`, `"id": "` + id + `"`},
		{`"id": "3f1c0d2e9a8b4c7d8e9f0a1b2c3d4e5f"`, `"id": "` + id + `-trace"`},
		{`"step": 20`, `"step": ` + strconv.FormatInt(step, 10)},
	} {
		if strings.Count(text, rep[0]) != 1 {
			r.t.Fatalf("episode.json no longer holds %s exactly once: update the Prime Traces tests", rep[0])
		}
		text = strings.Replace(text, rep[0], rep[1], 1)
	}
	return tracesDoc{id: id, step: step, time: r.stamp(), text: text}
}

// docs makes perStep documents for every step, named prefix-<step>-<n>.
func (r *tracesRig) docs(prefix string, perStep int, steps ...int64) []tracesDoc {
	var out []tracesDoc
	for _, step := range steps {
		for n := range perStep {
			out = append(out, r.doc(fmt.Sprintf("%s-%d-%d", prefix, step, n), step))
		}
	}
	return out
}

func stepRange(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// record is the document as a prime.episode record: the body a string
// holding the JSON, no prime.work.step (the document's run.work.step).
func (d tracesDoc) record() any {
	return map[string]any{"timeUnixNano": strconv.FormatInt(d.time, 10), "eventName": "prime.episode",
		"body": map[string]any{"stringValue": d.text}}
}

// column is a column-keyed prime.episode record, keyed by prime.work.step.
func (r *tracesRig) column(step int64, prompt string) (any, int64) {
	r.t.Helper()
	body, err := otlpJSONValue(json.NewDecoder(strings.NewReader(`{"prompt":"` + prompt + `","reward":1.0,"trajectory":[` +
		`{"messages":[{"role":"assistant","content":"a-` + prompt + `"}],"num_input_tokens":10,"num_output_tokens":20}]}`)))
	if err != nil {
		r.t.Fatal(err)
	}
	ts := r.stamp()
	return map[string]any{"timeUnixNano": strconv.FormatInt(ts, 10), "eventName": "prime.episode", "body": body,
		"attributes": []any{map[string]any{"key": "prime.work.step", "value": map[string]any{"intValue": strconv.FormatInt(step, 10)}}}}, ts
}

func (r *tracesRig) end() any {
	return map[string]any{"timeUnixNano": strconv.FormatInt(r.stamp(), 10), "eventName": "prime.run.end",
		"attributes": []any{map[string]any{"key": "prime.run.status", "value": map[string]any{"stringValue": "completed"}}}}
}

func docRecords(docs []tracesDoc) []any {
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d.record()
	}
	return out
}

// send posts one OTLP/JSON logs request of the rig's run; the collector
// has acknowledged it when send returns.
func (r *tracesRig) send(c *collector, records ...any) {
	r.t.Helper()
	str := func(k, v string) map[string]any {
		return map[string]any{"key": k, "value": map[string]any{"stringValue": v}}
	}
	postOTLPJSON(r.t, c, "/v1/logs", map[string]any{"resourceLogs": []any{map[string]any{
		"resource": map[string]any{"attributes": []any{
			str("prime.run.key", r.runKey), str("prime.run.model", "Qwen/Qwen3-4B"), str("prime.run.name", r.runKey),
		}},
		"scopeLogs": []any{map[string]any{"scope": map[string]any{"name": "orchestrator"}, "logRecords": records}},
	}}})
}

// onlyRun is the one run on the platform, or the zero Run while there is none.
func (r *tracesRig) onlyRun(c *collector) rfttest.Run {
	r.t.Helper()
	runs := r.platform.Runs()
	switch len(runs) {
	case 0:
		return rfttest.Run{}
	case 1:
		return runs[0]
	}
	fatalf(r.t, c, "%d runs on the platform, want the one of %s", len(runs), r.runKey)
	return rfttest.Run{}
}

// waitCompleted waits for the run's close-out and checks it completed.
func (r *tracesRig) waitCompleted(c *collector, dump func() string) rfttest.Run {
	r.t.Helper()
	eventually(r.t, "the run's close-out", func() bool {
		return r.onlyRun(c).Status != "" && r.onlyRun(c).Status != rfttest.StatusRunning
	}, dump)
	run := r.onlyRun(c)
	if run.Status != rfttest.StatusCompleted || !run.Finalized {
		fatalf(r.t, c, "run %s is %s (finalized %v), want completed by its prime.run.end", run.ID, run.Status, run.Finalized)
	}
	return run
}

// checkCommitted asserts that Prime Traces holds every sent document
// exactly once and nothing else: each in a batch for the team, stamped with
// the platform run on the document and on every member trace, the trainer's
// own run id kept as run.trainer_run_id right after id, and everything
// else as sent. Every committed batch has its own idempotency key, and no
// batch's context names the run.
func (r *tracesRig) checkCommitted(c *collector, runID string, sent []tracesDoc) {
	t := r.t
	t.Helper()
	byID := map[string]rfttest.TraceDocument{}
	for _, d := range r.platform.TraceDocuments() {
		var head struct{ ID string }
		if err := json.Unmarshal(d.Raw, &head); err != nil {
			fatalf(t, c, "a committed line is not JSON: %v\n%s", err, d.Raw)
		}
		if _, dup := byID[head.ID]; dup {
			fatalf(t, c, "document %s was committed twice (second time in upload %s)", head.ID, d.UploadID)
		}
		byID[head.ID] = d
	}
	want := map[string]bool{}
	for _, s := range sent {
		want[s.id] = true
		d, ok := byID[s.id]
		if !ok {
			fatalf(t, c, "document %s (step %d) was never committed to Prime Traces; %d of %d documents are there",
				s.id, s.step, len(byID), len(sent))
		}
		if d.Team != tracesTeam {
			fatalf(t, c, "document %s was sent with X-Prime-Team-ID %q, want %q", s.id, d.Team, tracesTeam)
		}
		if err := checkStamped(d.Raw, s.text, runID); err != nil {
			fatalf(t, c, "document %s: %v\ncommitted: %s", s.id, err, d.Raw)
		}
	}
	for id := range byID {
		if !want[id] {
			fatalf(t, c, "Prime Traces holds document %s, which was not sent as a document to be committed", id)
		}
	}
	keys := map[string]bool{}
	for _, u := range r.platform.TraceUploads() {
		if keys[u.IdempotencyKey] {
			fatalf(t, c, "two committed batches have the idempotency key %s", u.IdempotencyKey)
		}
		keys[u.IdempotencyKey] = true
		if u.Team != tracesTeam {
			fatalf(t, c, "batch %s was sent with X-Prime-Team-ID %q, want %q", u.UploadID, u.Team, tracesTeam)
		}
		if ctx, _ := json.Marshal(u.Context); strings.Contains(string(ctx), runID) {
			fatalf(t, c, "batch %s's metadata context %s names the run", u.UploadID, ctx)
		}
	}
}

// checkStamped compares a committed line with the document sent.
func checkStamped(line []byte, sentText, runID string) error {
	var got, orig map[string]any
	if err := json.Unmarshal(line, &got); err != nil {
		return err
	}
	if err := json.Unmarshal([]byte(sentText), &orig); err != nil {
		return err
	}
	if k, w := jsonKeys(line), jsonKeys([]byte(sentText)); !slices.Equal(k, w) {
		return fmt.Errorf("top-level keys %v, want %v as sent", k, w)
	}
	origRun := orig["run"].(map[string]any)
	wantRun := maps.Clone(origRun)
	wantRun["id"], wantRun["trainer_run_id"] = runID, tracesTrainerRunID
	if !reflect.DeepEqual(got["run"], wantRun) {
		return fmt.Errorf("run is %v, want %v", got["run"], wantRun)
	}
	var raw struct{ Run json.RawMessage }
	if err := json.Unmarshal(line, &raw); err != nil {
		return err
	}
	if k, w := jsonKeys(raw.Run), []string{"type", "id", "trainer_run_id", "name", "work"}; !slices.Equal(k, w) {
		return fmt.Errorf("run has keys %v, want %v (trainer_run_id right after id)", k, w)
	}
	traces, _ := got["traces"].([]any)
	if len(traces) == 0 {
		return fmt.Errorf("no member traces")
	}
	for i, tr := range traces {
		trace := tr.(map[string]any)
		if !reflect.DeepEqual(trace["run"], wantRun) {
			return fmt.Errorf("traces[%d].run is %v, want the document's stamped run %v", i, trace["run"], wantRun)
		}
		delete(trace, "run") // the fixture's trace has none of its own
	}
	got["run"] = origRun
	if !reflect.DeepEqual(got, orig) {
		return fmt.Errorf("apart from the run, the document is not what was sent")
	}
	return nil
}

// objectRows reads every object of the run, checking each is confirmed and
// holds rows of its own run and step only.
func objectRows(t *testing.T, c *collector, run rfttest.Run) []tableRow {
	t.Helper()
	var out []tableRow
	for _, o := range run.Objects {
		if !o.Confirmed {
			fatalf(t, c, "object %s of step %d was uploaded but never confirmed", o.Key, o.Step)
		}
		for _, row := range readTableRows(t, o.Body) {
			if row["run_id"] != run.ID || row["step"] != o.Step {
				fatalf(t, c, "object %s of step %d holds a row of run %v step %v", o.Key, o.Step, row["run_id"], row["step"])
			}
			out = append(out, row)
		}
	}
	return out
}

// rowDocument is the id of the document a row was projected from (its
// info.native_wrapper.id), or "" for a column-keyed episode's row.
func rowDocument(row tableRow) string {
	s, _ := row["info"].(string)
	var info struct {
		NativeWrapper *struct{ ID string } `json:"native_wrapper"`
	}
	if json.Unmarshal([]byte(s), &info) != nil || info.NativeWrapper == nil {
		return ""
	}
	return info.NativeWrapper.ID
}

// splitRows sorts rows into those of documents, by document id, and those
// of column-keyed episodes.
func splitRows(rows []tableRow) (byDoc map[string][]tableRow, columns []tableRow) {
	byDoc = map[string][]tableRow{}
	for _, row := range rows {
		if id := rowDocument(row); id != "" {
			byDoc[id] = append(byDoc[id], row)
		} else {
			columns = append(columns, row)
		}
	}
	return byDoc, columns
}

// checkDocumentRows asserts the table holds exactly one row of every
// cadence document of sent, with its step and created_at, and no row of any
// other document; it returns the rows of column-keyed episodes.
func checkDocumentRows(t *testing.T, c *collector, rows []tableRow, sent []tracesDoc) []tableRow {
	t.Helper()
	byDoc, columns := splitRows(rows)
	onCadence := 0
	for _, d := range sent {
		got := byDoc[d.id]
		delete(byDoc, d.id)
		if d.step%tracesStepInterval != 0 {
			if len(got) != 0 {
				fatalf(t, c, "document %s of the off-cadence step %d has %d rows", d.id, d.step, len(got))
			}
			continue
		}
		onCadence++
		if len(got) != 1 {
			fatalf(t, c, "document %s of the cadence step %d has %d rows, want one", d.id, d.step, len(got))
		}
		row := got[0]
		if row["step"] != d.step || row["created_at"] != d.time/1000 || row["reward"] != 1.0 || row["advantage"] != 0.5 {
			fatalf(t, c, "document %s's row has step %v created_at %v reward %v advantage %v, want %d %d 1 0.5",
				d.id, row["step"], row["created_at"], row["reward"], row["advantage"], d.step, d.time/1000)
		}
	}
	if len(byDoc) > 0 {
		fatalf(t, c, "the table holds rows of documents %v, which were not sent to it", slices.Sorted(maps.Keys(byDoc)))
	}
	if onCadence == 0 {
		fatalf(t, c, "no cadence document was sent: the test proves nothing")
	}
	return columns
}

func countLines(log, part string) int {
	n := 0
	for line := range strings.Lines(log) {
		if strings.Contains(line, part) {
			n++
		}
	}
	return n
}

func checkNoKey(t *testing.T, c *collector) {
	t.Helper()
	if strings.Contains(c.out.String(), e2eKey) {
		t.Fatal("the API key appears in the collector's output")
	}
}

func TestExclusiveRoutingCommitsEveryDocumentToPrimeTracesOnceStampedWithThePlatformRunAndColumnEpisodesStayRows(t *testing.T) {
	t.Parallel()
	r := newTracesRig(t, rfttest.Options{}, "exclusive", false)
	c := r.start()
	var sent []tracesDoc
	columnTimes := map[int64]int64{} // step → created_at (µs) of its column episode
	for _, step := range stepRange(1, 12) {
		docs := r.docs("ex", 2, step)
		sent = append(sent, docs...)
		records := docRecords(docs)
		if step == 5 || step == 7 || step == 10 {
			col, ts := r.column(step, "col-"+strconv.FormatInt(step, 10))
			records = append(records, col)
			columnTimes[step] = ts / 1000
		}
		if step == 12 {
			records = append(records, r.end())
		}
		r.send(c, records...)
	}
	run := r.waitCompleted(c, c.out.String)
	counters := scrapeCounters(t, c, r.metricsPort)
	c.stop()

	r.checkCommitted(c, run.ID, sent)
	byDoc, columns := splitRows(objectRows(t, c, run))
	if len(byDoc) > 0 {
		fatalf(t, c, "sample objects hold rows of the documents %v under exclusive routing", slices.Sorted(maps.Keys(byDoc)))
	}
	// The column-keyed episodes are rows as before: the cadence ones only.
	got := map[int64]int64{}
	for _, row := range columns {
		step := row["step"].(int64)
		if _, dup := got[step]; dup {
			fatalf(t, c, "step %d has two column rows", step)
		}
		got[step] = row["created_at"].(int64)
		if row["prompt"] != "col-"+strconv.FormatInt(step, 10) {
			fatalf(t, c, "step %d's row has prompt %v", step, row["prompt"])
		}
	}
	if want := map[int64]int64{5: columnTimes[5], 10: columnTimes[10]}; !maps.Equal(got, want) {
		fatalf(t, c, "column rows (step → created_at) %v, want %v: the cadence steps' column episodes and nothing else", got, want)
	}
	if n := counters.sum(counterTraceDocs); n != float64(len(sent)) {
		fatalf(t, c, "%s = %v, want %d", counterTraceDocs, n, len(sent))
	}
	if rej := counters.byReason(counterRejected); len(rej) > 0 {
		fatalf(t, c, "rejected %v, want nothing", rej)
	}
	if skipped, want := counters.byReason(counterSkipped), map[string]float64{"logs/off_cadence": 1}; !maps.Equal(skipped, want) {
		fatalf(t, c, "skipped %v, want %v (the column episode of step 7; documents are not the table's)", skipped, want)
	}
	checkNoKey(t, c)
	t.Logf("%d documents in %d batches (%d requests); %d column rows", len(sent), len(r.platform.TraceUploads()), r.platform.TraceRequests(), len(columns))
}

func TestBothRoutingCommitsEveryDocumentToPrimeTracesAndWritesEveryCadenceDocumentsRowToTheTable(t *testing.T) {
	t.Parallel()
	r := newTracesRig(t, rfttest.Options{}, "both", false)
	c := r.start()
	var sent []tracesDoc
	for _, step := range stepRange(1, 10) {
		docs := r.docs("both", 2, step)
		sent = append(sent, docs...)
		records := docRecords(docs)
		if step == 10 {
			records = append(records, r.end())
		}
		r.send(c, records...)
	}
	run := r.waitCompleted(c, c.out.String)
	counters := scrapeCounters(t, c, r.metricsPort)
	c.stop()

	r.checkCommitted(c, run.ID, sent)
	if columns := checkDocumentRows(t, c, objectRows(t, c, run), sent); len(columns) > 0 {
		fatalf(t, c, "%d rows come from no document", len(columns))
	}
	if rej := counters.byReason(counterRejected); len(rej) > 0 {
		fatalf(t, c, "rejected %v, want nothing", rej)
	}
	if skipped, want := counters.byReason(counterSkipped), map[string]float64{"logs/off_cadence": 16}; !maps.Equal(skipped, want) {
		fatalf(t, c, "skipped %v, want %v (the off-cadence documents have no row)", skipped, want)
	}
	checkNoKey(t, c)
}

func TestAnAccountWithoutPrimeTracesGetsTheRunsDocumentsAsTableRowsAndOneLogLine(t *testing.T) {
	t.Parallel()
	r := newTracesRig(t, rfttest.Options{TracesDisabledTeams: []string{tracesTeam}}, "exclusive", false)
	c := r.start()
	first := r.docs("fb", 2, stepRange(1, 5)...)
	r.send(c, docRecords(first)...)
	eventually(t, "the fallback to the table", func() bool {
		run := r.onlyRun(c)
		return strings.Contains(c.out.String(), tracesFallbackLine) && len(run.Objects) == 1 && run.Objects[0].Confirmed
	}, c.out.String)
	asked := r.platform.TraceRequests()

	sent := first
	for _, step := range stepRange(6, 10) {
		docs := r.docs("fb", 2, step)
		sent = append(sent, docs...)
		records := docRecords(docs)
		if step == 10 {
			records = append(records, r.end())
		}
		r.send(c, records...)
	}
	run := r.waitCompleted(c, c.out.String)
	counters := scrapeCounters(t, c, r.metricsPort)
	c.stop()

	if docs := r.platform.TraceDocuments(); len(docs) > 0 {
		fatalf(t, c, "Prime Traces committed %d documents for an account without it", len(docs))
	}
	if asked == 0 {
		fatalf(t, c, "Prime Traces was never asked: the fallback was not its answer")
	}
	if n := r.platform.TraceRequests(); n != asked {
		fatalf(t, c, "Prime Traces was asked %d times, %d after the run moved to the table", n, n-asked)
	}
	checkDocumentRows(t, c, objectRows(t, c, run), sent)
	if n := countLines(c.out.String(), tracesFallbackLine); n != 1 {
		fatalf(t, c, "%d log lines say %q, want one", n, tracesFallbackLine)
	}
	if !logHasLine(c.out.String(), tracesFallbackLine, run.ID) {
		fatalf(t, c, "the fallback line does not name the run %s", run.ID)
	}
	if rej := counters.byReason(counterRejected); len(rej) > 0 {
		fatalf(t, c, "rejected %v, want nothing", rej)
	}
	if skipped, want := counters.byReason(counterSkipped), map[string]float64{"logs/off_cadence": 16}; !maps.Equal(skipped, want) {
		fatalf(t, c, "skipped %v, want %v", skipped, want)
	}
	checkNoKey(t, c)
}

func TestAPrimeTracesRefusalOtherThanNoPrimeTracesRejectsTheBatchAndNeverMovesTheRunToTheTable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		fault rfttest.Fault
	}{
		{"403 forbidden", rfttest.Fault{Status: 403, Code: "forbidden"}},
		{"400 invalid_trace", rfttest.Fault{Status: 400, Code: "invalid_trace"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newTracesRig(t, rfttest.Options{}, "exclusive", false)
			c := r.start()
			r.platform.Inject(rfttest.RouteTraces, tt.fault)
			refused := r.docs("refused", 2, stepRange(1, 5)...)
			r.send(c, docRecords(refused)...)
			eventually(t, "the refused batch's rejection", func() bool {
				return scrapeCounters(t, c, r.metricsPort).sum(counterRejected, "reason", "traces_rejected") >= float64(len(refused))
			}, c.out.String)
			if n := r.platform.TraceRequests(); n != 1 {
				fatalf(t, c, "Prime Traces was asked %d times for the refused batch, want once (a refusal is final)", n)
			}

			// The run stays on Prime Traces: later documents go there.
			later := r.docs("later", 2, stepRange(6, 10)...)
			r.send(c, append(docRecords(later), r.end())...)
			run := r.waitCompleted(c, c.out.String)
			counters := scrapeCounters(t, c, r.metricsPort)
			c.stop()

			if len(run.Objects) > 0 {
				fatalf(t, c, "%d sample objects: a refused batch went to the table", len(run.Objects))
			}
			r.checkCommitted(c, run.ID, later)
			if rej, want := counters.byReason(counterRejected), map[string]float64{"logs/traces_rejected": float64(len(refused))}; !maps.Equal(rej, want) {
				fatalf(t, c, "rejected %v, want %v", rej, want)
			}
			if !logHasLine(c.out.String(), "Prime Traces refused a batch", tt.fault.Code) {
				fatalf(t, c, "no log line says Prime Traces refused the batch with %s", tt.fault.Code)
			}
			if strings.Contains(c.out.String(), tracesFallbackLine) {
				fatalf(t, c, "the collector logged a fallback to the table")
			}
			checkNoKey(t, c)
		})
	}
}

func TestPrimeTracesCommitsEachDocumentExactlyOnceThroughLostAnswersAndAnOutage(t *testing.T) {
	t.Parallel()
	r := newTracesRig(t, rfttest.Options{}, "both", false)
	c := r.start()
	var sent []tracesDoc
	dump := c.out.String

	// Before: the run exists, its first documents are committed.
	a := r.docs("a", 2, stepRange(1, 5)...)
	sent = append(sent, a...)
	r.send(c, docRecords(a)...)
	eventually(t, "the first batch", func() bool { return len(r.platform.TraceDocuments()) == len(a) }, dump)

	// The first attempt commits but its answer is lost, the in-place
	// retries find the platform answering 503 until the push hands the
	// batch back; the queue's retry commits nothing new, but loses its
	// connection after processing, and the retry of that is answered.
	requests := r.platform.TraceRequests()
	busy := rfttest.Fault{Status: 503, RetryAfter: "1"}
	lost := busy
	lost.AfterProcessing = true
	r.platform.Inject(rfttest.RouteTraces, lost, busy, busy, busy, busy, rfttest.Fault{DropConnection: true, AfterProcessing: true})
	b := r.docs("b", 2, stepRange(6, 10)...)
	sent = append(sent, b...)
	r.send(c, docRecords(b)...)
	eventually(t, "the replayed batch's rows", func() bool {
		run := r.onlyRun(c)
		return r.platform.PendingFaults(rfttest.RouteTraces) == 0 && slices.ContainsFunc(run.Objects, func(o rfttest.Object) bool {
			return o.Step == 10 && o.Confirmed
		})
	}, dump)
	if n := r.platform.TraceRequests() - requests; n < 7 {
		fatalf(t, c, "%d requests for the faulted batch, want at least 7 (5 in place, the queue's retry, its retry)", n)
	}

	// An outage: every route answers 503 for longer than the in-place
	// retries last.
	requests = r.platform.TraceRequests()
	r.platform.SetOutage(&busy)
	d := r.docs("c", 2, stepRange(11, 15)...)
	sent = append(sent, d...)
	r.send(c, docRecords(d)...)
	eventually(t, "the in-place retries to run out in the outage", func() bool {
		return r.platform.TraceRequests()-requests >= 6
	}, dump)
	r.platform.SetOutage(nil)
	duringOutage := r.platform.TraceRequests() - requests

	e := r.docs("d", 2, 20)
	sent = append(sent, e...)
	r.send(c, append(docRecords(e), r.end())...)
	run := r.waitCompleted(c, dump)
	counters := scrapeCounters(t, c, r.metricsPort)
	c.stop()

	r.checkCommitted(c, run.ID, sent)
	checkDocumentRows(t, c, objectRows(t, c, run), sent)
	if rej := counters.byReason(counterRejected); len(rej) > 0 {
		fatalf(t, c, "rejected %v, want nothing", rej)
	}
	if n := counters.sum(counterTraceDocs); n != float64(len(sent)) {
		fatalf(t, c, "%s = %v, want %d (each document counted once)", counterTraceDocs, n, len(sent))
	}
	checkNoKey(t, c)
	t.Logf("%d documents committed once in %d batches over %d requests (%d during the outage)",
		len(sent), len(r.platform.TraceUploads()), r.platform.TraceRequests(), duringOutage)
}

func TestAKilledCollectorRestartsFromItsStorageAndCommitsEveryPrimeTracesDocumentExactlyOnce(t *testing.T) {
	t.Parallel()
	// The kill lands at a different point each time: with a batch in flight
	// (sent, not yet processed) after one or four committed batches, and
	// with a batch committed whose answer had not come back.
	for _, tt := range []struct {
		name       string
		committed  int
		answerLost bool
	}{
		{"a batch in flight after 1 committed", 1, false},
		{"a batch in flight after 4 committed", 4, false},
		{"the 3rd batch committed with its answer lost", 3, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			killTracesAndRestart(t, tt.committed, tt.answerLost)
		})
	}
}

func killTracesAndRestart(t *testing.T, committed int, answerLost bool) {
	r := newTracesRig(t, rfttest.Options{}, "exclusive", true)
	// A slow Prime Traces keeps a backlog in the queue when the collector
	// dies. A delayed request is processed after its delay, or not at all
	// when the client goes away first; answerLost processes the last batch
	// before the kill at once and holds its answer back.
	for i := range 40 {
		f := rfttest.Fault{Delay: 250 * time.Millisecond}
		if answerLost && i == committed-1 {
			f = rfttest.Fault{AfterProcessing: true, Delay: 30 * time.Second}
		}
		r.platform.Inject(rfttest.RouteTraces, f)
	}
	first := r.start()
	var sent []tracesDoc
	for _, step := range stepRange(1, 40) {
		docs := r.docs("k", 3, step)
		sent = append(sent, docs...)
		r.send(first, docRecords(docs)...)
		time.Sleep(10 * time.Millisecond)
	}
	eventually(t, "the kill point", func() bool {
		uploads := len(r.platform.TraceUploads())
		if answerLost {
			return uploads >= committed
		}
		return uploads >= committed && r.platform.TraceRequests() > uploads
	}, first.out.String)
	first.kill()
	uploadsBefore, docsBefore := len(r.platform.TraceUploads()), len(r.platform.TraceDocuments())

	second := r.start()
	dump := func() string { return first.out.String() + "\n--- after the restart ---\n" + second.out.String() }
	last := r.docs("k", 3, 41, 45)
	sent = append(sent, last...)
	r.send(second, append(docRecords(last), r.end())...)
	run := r.waitCompleted(second, dump)
	second.stop()

	r.checkCommitted(second, run.ID, sent)
	if len(run.Objects) > 0 {
		fatalf(t, second, "%d sample objects under exclusive routing", len(run.Objects))
	}
	if docsBefore >= len(sent)-len(last) {
		fatalf(t, second, "all %d documents were committed before the kill: the test proves nothing", docsBefore)
	}
	if requests, uploads := r.platform.TraceRequests(), len(r.platform.TraceUploads()); requests <= uploads {
		fatalf(t, second, "%d requests for %d committed batches: the batch of the kill was not sent again", requests, uploads)
	}
	if !strings.Contains(second.out.String(), "Restored runs from storage") {
		fatalf(t, second, "the restarted collector did not restore its runs")
	}
	t.Logf("before the kill: %d batches, %d of %d documents; in the end: %d batches, %d requests",
		uploadsBefore, docsBefore, len(sent), len(r.platform.TraceUploads()), r.platform.TraceRequests())
}
