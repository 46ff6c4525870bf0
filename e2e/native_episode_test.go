package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// A verifiers Episode.to_record() document sent as the prime.episode body
// is projected the way the platform's SDK projects it (the native episode
// contract): testdata/verifiers-episode/ holds the document and, in its
// README, the row worked out by hand. The record carries no prime.work.step:
// the step comes from the document's run.work.step.

const nativeEpisodeTime = 1767225601000000000 // the record's time_unix_nano

func TestAVerifiersEpisodeDocumentLandsAsTheRowThePlatformSDKWouldProject(t *testing.T) {
	otelcol, _ := binaries(t)
	doc, err := os.ReadFile(filepath.Join("testdata", "verifiers-episode", "episode.json"))
	if err != nil {
		t.Fatal(err)
	}
	mapBody, err := otlpJSONValue(json.NewDecoder(bytes.NewReader(doc)))
	if err != nil {
		t.Fatalf("episode.json: %v", err)
	}
	bodies := map[string]any{
		"text": map[string]any{"stringValue": string(doc)},
		"map":  mapBody,
	}

	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}})
	defer platform.Close()
	addr := freeAddr(t)
	_, metricsPort, _ := strings.Cut(freeAddr(t), ":")
	c := startCollector(t, otelcol, replayConfig(t), "PRIME_OTLP_HTTP="+addr, "PRIME_METRICS_PORT="+metricsPort,
		"PRIME_API_BASE="+platform.BaseURL()+"/rft", "PRIME_API_KEY="+e2eKey)
	for _, kind := range slices.Sorted(maps.Keys(bodies)) {
		postOTLPJSON(t, c, "/v1/logs", nativeEpisodeRequest("native-"+kind, bodies[kind]))
	}
	eventually(t, "both runs' close-out", func() bool {
		runs := platform.Runs()
		return len(runs) == 2 && runs[0].Status != rfttest.StatusRunning && runs[1].Status != rfttest.StatusRunning
	}, c.out.String)
	rejected := scrapeCounters(t, c, metricsPort).byReason(counterRejected)
	c.stop()

	var record any
	if err := json.Unmarshal(doc, &record); err != nil {
		t.Fatal(err)
	}
	for _, run := range platform.Runs() {
		name, _ := run.Spec["name"].(string)
		t.Run(strings.TrimPrefix(name, "native-")+" body", func(t *testing.T) {
			if run.Status != rfttest.StatusCompleted {
				fatalf(t, c, "run %s is %s, want completed", name, run.Status)
			}
			var rows []tableRow
			for _, o := range run.Objects {
				if !o.Confirmed || o.Step != 20 {
					fatalf(t, c, "run %s: object %s of step %d (confirmed %v), want one confirmed object of step 20", name, o.Key, o.Step, o.Confirmed)
				}
				rows = append(rows, readTableRows(t, o.Body)...)
			}
			if len(rows) != 1 {
				fatalf(t, c, "run %s has %d rows, want the episode's one (the collector rejected %v)", name, len(rows), rejected)
			}
			if err := checkNativeRow(rows[0], run.ID, record); err != nil {
				fatalf(t, c, "run %s: %v\nrow: %v", name, err, rows[0])
			}
		})
	}
	if len(rejected) > 0 {
		fatalf(t, c, "rejected %v, want nothing", rejected)
	}
}

// checkNativeRow compares a row with the projection in
// testdata/verifiers-episode/README.md.
func checkNativeRow(row tableRow, runID string, record any) error {
	scalars := map[string]any{
		"run_id": runID, "step": int64(20), "problem_id": int64(7), "env_name": "primeintellect/gsm8k",
		"tag": "", "prompt": "", "answer": "", "reward": 1.0, "advantage": 0.5,
		"num_input_tokens": int64(6), "num_output_tokens": int64(1), "created_at": int64(nativeEpisodeTime / 1000),
	}
	for _, col := range slices.Sorted(maps.Keys(scalars)) {
		if row[col] != scalars[col] {
			return fmt.Errorf("%s is %#v, want %#v", col, row[col], scalars[col])
		}
	}
	trace := pick(record, "traces", 0)
	nodes := pick(trace, "nodes").([]any)
	msg := func(i int) any { return pick(nodes[i], "message") }
	branch1 := []any{msg(0), msg(1), msg(2)}
	branch2 := []any{msg(0), msg(3), msg(4)}
	want := map[string]any{
		"trajectory": []any{
			map[string]any{"messages": branch1, "num_input_tokens": 5.0, "num_output_tokens": 3.0, "advantage": 0.5},
			map[string]any{"messages": branch2, "num_input_tokens": 6.0, "num_output_tokens": 1.0, "advantage": 0.5},
		},
		"completion": branch2,
		"task":       pick(trace, "task", "data"),
		"metrics":    pick(trace, "metrics"),
		"timing":     pick(trace, "timing"),
		"info":       map[string]any{"advantage": 0.5, "native_wrapper": record, "native_trace_index": 0.0},
	}
	for _, col := range slices.Sorted(maps.Keys(want)) {
		s, _ := row[col].(string)
		var got any
		if err := json.Unmarshal([]byte(s), &got); err != nil {
			return fmt.Errorf("%s is %#v, not JSON text: %v", col, row[col], err)
		}
		if !reflect.DeepEqual(got, normJSON(want[col])) {
			w, _ := json.Marshal(want[col])
			return fmt.Errorf("%s is\n%s\nwant (as JSON)\n%s", col, s, w)
		}
	}
	// Key order, which the projection keeps: the branches' and info's.
	var branches []json.RawMessage
	if err := json.Unmarshal([]byte(row["trajectory"].(string)), &branches); err != nil {
		return err
	}
	for i, b := range branches {
		if keys, want := jsonKeys(b), []string{"messages", "num_input_tokens", "num_output_tokens", "advantage"}; !slices.Equal(keys, want) {
			return fmt.Errorf("trajectory branch %d has keys %v, want %v in that order", i, keys, want)
		}
	}
	if keys, want := jsonKeys([]byte(row["info"].(string))), []string{"advantage", "native_wrapper", "native_trace_index"}; !slices.Equal(keys, want) {
		return fmt.Errorf("info has keys %v, want %v in that order", keys, want)
	}
	return nil
}

// nativeEpisodeRequest is an OTLP/JSON logs request for one run: the
// episode record (no prime.work.step attribute) and the run's end.
func nativeEpisodeRequest(runKey string, body any) map[string]any {
	str := func(k, v string) map[string]any {
		return map[string]any{"key": k, "value": map[string]any{"stringValue": v}}
	}
	return map[string]any{"resourceLogs": []any{map[string]any{
		"resource": map[string]any{"attributes": []any{
			str("prime.run.key", runKey), str("prime.run.model", "Qwen/Qwen3-4B"), str("prime.run.name", runKey),
		}},
		"scopeLogs": []any{map[string]any{"scope": map[string]any{"name": "orchestrator"}, "logRecords": []any{
			map[string]any{"timeUnixNano": fmt.Sprint(int64(nativeEpisodeTime)), "eventName": "prime.episode", "body": body},
			map[string]any{"timeUnixNano": fmt.Sprint(int64(nativeEpisodeTime + 1_000_000_000)), "eventName": "prime.run.end",
				"attributes": []any{str("prime.run.status", "completed")}},
		}}},
	}}}
}

// postOTLPJSON sends an OTLP/JSON request to the collector's receiver.
func postOTLPJSON(t *testing.T, c *collector, route string, req any) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post("http://"+c.addr+route, "application/json", bytes.NewReader(body))
	if err != nil {
		fatalf(t, c, "POST %s: %v", route, err)
	}
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fatalf(t, c, "POST %s: %s %s", route, resp.Status, reply)
	}
}

// otlpJSONValue reads one JSON value from dec as an OTLP/JSON AnyValue,
// keeping object keys in order (a kvlist is ordered): objects become
// kvlistValue, arrays arrayValue, numbers intValue when written without a
// fraction or exponent (as Python writes an int) and doubleValue otherwise,
// null the empty AnyValue.
func otlpJSONValue(dec *json.Decoder) (any, error) {
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			values := []any{}
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := otlpJSONValue(dec)
				if err != nil {
					return nil, err
				}
				values = append(values, map[string]any{"key": key, "value": v})
			}
			_, err := dec.Token()
			return map[string]any{"kvlistValue": map[string]any{"values": values}}, err
		case '[':
			values := []any{}
			for dec.More() {
				v, err := otlpJSONValue(dec)
				if err != nil {
					return nil, err
				}
				values = append(values, v)
			}
			_, err := dec.Token()
			return map[string]any{"arrayValue": map[string]any{"values": values}}, err
		}
	case json.Number:
		if strings.ContainsAny(tok.String(), ".eE") {
			f, err := tok.Float64()
			return map[string]any{"doubleValue": f}, err
		}
		return map[string]any{"intValue": tok.String()}, nil
	case string:
		return map[string]any{"stringValue": tok}, nil
	case bool:
		return map[string]any{"boolValue": tok}, nil
	case nil:
		return map[string]any{}, nil
	}
	return nil, errors.New("unexpected JSON token")
}

// pick walks a decoded JSON value by object keys and array indices.
func pick(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v = v.(map[string]any)[p]
		case int:
			v = v.([]any)[p]
		}
	}
	return v
}

// jsonKeys lists a JSON object's top-level keys in order.
func jsonKeys(raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return keys
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}
