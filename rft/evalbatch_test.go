package rft

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// padded is a sample of exactly size bytes of compact JSON.
func padded(t *testing.T, id string, size int) json.RawMessage {
	t.Helper()
	frame := `{"sample_id":"` + id + `","pad":""}`
	if size < len(frame) {
		t.Fatalf("a sample cannot be smaller than %d bytes", len(frame))
	}
	return json.RawMessage(strings.Replace(frame, `"pad":""`, `"pad":"`+strings.Repeat("x", size-len(frame))+`"`, 1))
}

func TestSampleBatchesCutBeforeTheSampleThatWouldPassTheLimit(t *testing.T) {
	const limit = 100
	// Samples of n bytes, as sent.
	sized := func(t *testing.T, ns ...int) []json.RawMessage {
		out := make([]json.RawMessage, len(ns))
		for i, n := range ns {
			out[i] = padded(t, string(rune('a'+i)), n)
		}
		return out
	}
	tests := []struct {
		name     string
		samples  func(t *testing.T) []json.RawMessage
		batches  [][]int
		tooLarge []int
		invalid  []int
	}{
		{"no samples", func(*testing.T) []json.RawMessage { return nil }, nil, nil, nil},
		{"samples that fit share one request", func(t *testing.T) []json.RawMessage { return sized(t, 30, 30) },
			[][]int{{0, 1}}, nil, nil},
		// 14 + 45 + 1 + 40 = 100: the envelope, two samples and their comma.
		{"a request filled to the byte keeps its last sample", func(t *testing.T) []json.RawMessage { return sized(t, 45, 40, 30) },
			[][]int{{0, 1}, {2}}, nil, nil},
		{"one byte over moves the sample to the next request", func(t *testing.T) []json.RawMessage { return sized(t, 45, 41, 30) },
			[][]int{{0}, {1, 2}}, nil, nil},
		{"a sample that fits only alone has a request of its own", func(t *testing.T) []json.RawMessage { return sized(t, 30, 86, 30) },
			[][]int{{0}, {1}, {2}}, nil, nil},
		{"a sample that can never fit is reported alone and the rest are batched", func(t *testing.T) []json.RawMessage { return sized(t, 30, 87, 30) },
			[][]int{{0, 2}}, []int{1}, nil},
		{"samples that are not JSON objects are reported and the rest are batched", func(t *testing.T) []json.RawMessage {
			return []json.RawMessage{json.RawMessage(`[1]`), sized(t, 30)[0], json.RawMessage(`{"a":`), json.RawMessage("{\"a\":\"\xff\"}"), json.RawMessage(``)}
		}, [][]int{{1}}, nil, []int{0, 2, 3, 4}},
		{"space is not counted, since the compact form is what is sent", func(*testing.T) []json.RawMessage {
			return []json.RawMessage{json.RawMessage(`{ "sample_id" : "a" ,` + strings.Repeat(" ", 200) + `"n": 1 }`)}
		}, [][]int{{0}}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := tt.samples(t)
			batches, tooLarge, invalid := sampleBatches(samples, limit)
			index := make(map[string]int, len(samples)) // the samples are distinct
			for i, s := range samples {
				index[string(s)] = i
			}
			var got [][]int
			for _, b := range batches {
				var idx []int
				for _, s := range b {
					idx = append(idx, index[string(s)])
				}
				got = append(got, idx)
			}
			if !reflect.DeepEqual(got, tt.batches) || !reflect.DeepEqual(tooLarge, tt.tooLarge) || !reflect.DeepEqual(invalid, tt.invalid) {
				t.Fatalf("batches %v, tooLarge %v, invalid %v; want %v, %v, %v", got, tooLarge, invalid, tt.batches, tt.tooLarge, tt.invalid)
			}
			for i, b := range batches {
				body, why := samplesBody(b, limit)
				if why != "" || len(body) > limit {
					t.Errorf("batch %d cannot be sent (%d bytes): %s", i, len(body), why)
				}
				if i+1 < len(batches) {
					// The cut was needed: with the next batch's first sample
					// the request would not fit.
					if _, why := samplesBody(append(append([]json.RawMessage{}, b...), batches[i+1][0]), limit); why == "" {
						t.Errorf("batch %d was closed before a sample that would have fitted", i)
					}
				}
			}
		})
	}
}

// newEvalTest starts a fake platform whose hub has primeintellect/gsm8k as
// env-1, and a client for it.
func newEvalTest(t *testing.T, mods ...func(*Options)) (*rfttest.Server, *Client) {
	t.Helper()
	srv := rfttest.NewServer(rfttest.Options{APIKey: testKey})
	t.Cleanup(srv.Close)
	srv.AddEnvironment(rfttest.HubEnvironment{ID: "env-1", Owner: "primeintellect", Name: "gsm8k", Versions: []string{"v1"}})
	c, _ := newTestClient(t, srv.BaseURL(), mods...)
	return srv, c
}

// sampleBodies are the bodies of the samples requests the fake received.
func sampleBodies(srv *rfttest.Server) [][]byte {
	var out [][]byte
	for _, r := range srv.Requests() {
		if strings.HasSuffix(r.Path, "/samples") {
			out = append(out, r.Body)
		}
	}
	return out
}

func TestABatchCutAt25MiBRoundTripsExactly(t *testing.T) {
	srv, c := newEvalTest(t)
	srv.AddEvaluation("eval-1")
	small := padded(t, "b", 40)
	big := padded(t, "a", MaxSamplesRequestBytes-samplesEnvelope-1-len(small)) // with small and its comma: 25 MiB to the byte
	last := padded(t, "c", 40)

	batches, tooLarge, invalid := SampleBatches([]json.RawMessage{big, small, last})
	if len(batches) != 2 || len(batches[0]) != 2 || len(batches[1]) != 1 || tooLarge != nil || invalid != nil {
		t.Fatalf("%d batches (%d, …), tooLarge %v, invalid %v; want [big small] [last]", len(batches), len(batches[0]), tooLarge, invalid)
	}
	for _, b := range batches {
		if err := c.AppendSamples(context.Background(), "eval-1", b); err != nil {
			t.Fatal(err)
		}
	}

	bodies := sampleBodies(srv)
	if len(bodies) != 2 {
		t.Fatalf("%d samples requests, want 2", len(bodies))
	}
	if len(bodies[0]) != MaxSamplesRequestBytes {
		t.Errorf("the first request is %d bytes, want exactly %d", len(bodies[0]), MaxSamplesRequestBytes)
	}
	if want := `{"samples":[` + string(big) + `,` + string(small) + `]}`; string(bodies[0]) != want {
		t.Error("the first request is not the envelope, big, a comma and small")
	}
	if want := `{"samples":[` + string(last) + `]}`; string(bodies[1]) != want {
		t.Errorf("the second request is %q, want %q", bodies[1], want)
	}
	e, _ := srv.Evaluation("eval-1")
	var ids []any
	for _, s := range e.Samples {
		ids = append(ids, s["sample_id"])
	}
	if !reflect.DeepEqual(ids, []any{"a", "b", "c"}) || !reflect.DeepEqual(e.Appends, []int{2, 1}) {
		t.Errorf("stored %v in appends %v", ids, e.Appends)
	}
}

func TestASampleThatCanNeverFitIsReportedAloneAndNeverSent(t *testing.T) {
	srv, c := newEvalTest(t)
	srv.AddEvaluation("eval-1")
	huge := padded(t, "h", MaxSamplesRequestBytes-samplesEnvelope+1) // one byte more than fits alone
	a, b := padded(t, "a", 40), padded(t, "b", 40)

	batches, tooLarge, invalid := SampleBatches([]json.RawMessage{a, huge, b})
	if len(batches) != 1 || len(batches[0]) != 2 || !reflect.DeepEqual(tooLarge, []int{1}) || invalid != nil {
		t.Fatalf("batches of %d, tooLarge %v, invalid %v; want [a b] and sample 1 reported", len(batches), tooLarge, invalid)
	}

	err := c.AppendSamples(context.Background(), "eval-1", []json.RawMessage{huge})
	e := mustError(t, err)
	if e.Class != ClassRejected || e.Attempts != 0 || !strings.Contains(e.Error(), "SampleBatches") {
		t.Errorf("got %v (class %v, %d attempts)", e, e.Class, e.Attempts)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests: an oversized sample was sent", n)
	}
	if ev, _ := srv.Evaluation("eval-1"); len(ev.Samples) != 0 {
		t.Error("the oversized sample was stored")
	}
}
