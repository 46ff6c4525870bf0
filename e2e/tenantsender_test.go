package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// tenantSender is one tenant's trainer sending a run's episodes to the
// multi-tenant gateway over OTLP/HTTP (JSON, over TLS, its key as Bearer),
// as an OTel SDK does when it is throttled: a request answered 429 is sent
// again, unchanged, after its Retry-After; one answered 200 was accepted.
// Each request is episodes of a step of its own (a multiple of the
// gateway's step_interval, 10), each episode with a problem_id of its own,
// so what landed can be matched to what was accepted.
type tenantSender struct {
	g                 *mtGateway
	client            *http.Client
	key, runKey, team string
	origin            time.Time
	// filler lengthens each episode's completion (none when "").
	filler string

	nextID   atomic.Int64 // the next request's first problem_id
	nextStep atomic.Int64

	mu       sync.Mutex
	accepted map[int64]bool  // problem ids the gateway accepted
	latency  []time.Duration // each accepted request's, from its first attempt

	attempts         atomic.Int64 // requests sent, resends included
	attemptedRecords atomic.Int64
	throttled        atomic.Int64 // attempts answered 429
	throttledRecords atomic.Int64
}

func newTenantSender(g *mtGateway, key, runKey, team string) *tenantSender {
	return &tenantSender{
		g: g, client: g.client(false), key: key, runKey: runKey, team: team,
		origin: time.Now(), accepted: map[int64]bool{},
	}
}

// sentRequest is one OTLP/JSON logs request and the problem ids of its
// episodes.
type sentRequest struct {
	ids  []int64
	body []byte
}

// nextRequest is the next request, of n episodes.
func (s *tenantSender) nextRequest(n int) sentRequest {
	first := s.nextID.Add(int64(n)) - int64(n)
	step := 10 * s.nextStep.Add(1)
	ids := make([]int64, n)
	records := make([]any, n)
	for i := range ids {
		id := first + int64(i)
		ids[i] = id
		prompt := fmt.Sprintf("%s: what is %d + %d?", s.runKey, id, id)
		messages := []any{
			otlpMap(otlpKV("role", "user"), otlpKV("content", prompt)),
			otlpMap(otlpKV("role", "assistant"), otlpKV("content", s.filler+"The answer is "+strconv.FormatInt(2*id, 10)+".")),
		}
		body := otlpMap(otlpKV("tag", "train"), otlpKV("problem_id", id), otlpKV("prompt", prompt),
			otlpKV("trajectory", []any{otlpMap(otlpKV("messages", messages))}), otlpKV("answer", strconv.FormatInt(2*id, 10)), otlpKV("reward", 1.0))
		at := strconv.FormatInt(s.origin.Add(time.Duration(id)*time.Microsecond).UnixNano(), 10)
		records[i] = otlpRecord(at, "prime.episode", body, otlpKV("prime.work.step", step))
	}
	return sentRequest{ids, s.body(records...)}
}

// body is an OTLP/JSON logs request of the sender's run.
func (s *tenantSender) body(records ...any) []byte {
	raw, _ := json.Marshal(map[string]any{"resourceLogs": []any{map[string]any{
		"resource": map[string]any{"attributes": []any{
			otlpKV("prime.run.key", s.runKey), otlpKV("prime.run.team_id", s.team), otlpKV("prime.run.model", "Qwen/Qwen3-0.6B"),
		}},
		"scopeLogs": []any{map[string]any{"scope": map[string]any{"name": "limits"}, "logRecords": records}},
	}}})
	return raw
}

// post sends body once and returns the status and, on a 429, the
// Retry-After the gateway asked for (an error when it is not whole
// seconds of at least one).
func (s *tenantSender) post(ctx context.Context, body []byte, records int) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+s.g.httpAddr+"/v1/logs", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.key)
	s.attempts.Add(1)
	s.attemptedRecords.Add(int64(records))
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	reply, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return http.StatusOK, 0, partialRejection("/v1/logs", reply)
	case http.StatusTooManyRequests:
		s.throttled.Add(1)
		s.throttledRecords.Add(int64(records))
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || secs < 1 {
			return resp.StatusCode, 0, fmt.Errorf("429 with Retry-After %q, want whole seconds ≥ 1: %s", resp.Header.Get("Retry-After"), statusMessage(string(reply)))
		}
		return resp.StatusCode, time.Duration(secs) * time.Second, nil
	case http.StatusServiceUnavailable:
		// A full queue or the memory limiter: an SDK backs off and sends
		// again.
		return resp.StatusCode, time.Second, nil
	}
	return resp.StatusCode, 0, fmt.Errorf("answered %d: %s", resp.StatusCode, reply)
}

// deliver sends one request until it is accepted, honouring Retry-After,
// and records its ids as accepted and how long it took from its first
// attempt; false when ctx ended first (nothing of it was accepted).
func (s *tenantSender) deliver(ctx context.Context, r sentRequest) (bool, error) {
	began := time.Now()
	for {
		code, wait, err := s.post(ctx, r.body, max(1, len(r.ids))) // an end is one record
		if ctx.Err() != nil {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if code == http.StatusOK {
			s.mu.Lock()
			for _, id := range r.ids {
				s.accepted[id] = true
			}
			s.latency = append(s.latency, time.Since(began))
			s.mu.Unlock()
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-time.After(wait):
		}
	}
}

// end sends the run's prime.run.end until it is accepted.
func (s *tenantSender) end(ctx context.Context) error {
	record := otlpRecord(strconv.FormatInt(time.Now().UnixNano(), 10), "prime.run.end", nil, otlpKV("prime.run.status", "completed"))
	ok, err := s.deliver(ctx, sentRequest{body: s.body(record)})
	if err == nil && !ok {
		err = fmt.Errorf("prime.run.end was never accepted: %w", ctx.Err())
	}
	return err
}

// acceptedIDs is how many episodes the gateway accepted.
func (s *tenantSender) acceptedIDs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.accepted)
}

// checkLandedOnce fails unless the run's confirmed rows are exactly the
// accepted episodes, each once, and returns how many.
func (s *tenantSender) checkLandedOnce(t *testing.T, run rfttest.Run) int {
	t.Helper()
	seen := map[int64]int{}
	for _, o := range run.Objects {
		if !o.Confirmed {
			t.Errorf("%s: object %s uploaded but never confirmed", s.runKey, o.Key)
			continue
		}
		for _, row := range readTableRows(t, o.Body) {
			id, ok := row["problem_id"].(int64)
			if !ok {
				t.Fatalf("%s: a row without a problem_id: %v", s.runKey, row)
			}
			seen[id]++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s: episode %d is in the table %d times", s.runKey, id, n)
		}
		if !s.accepted[id] {
			t.Errorf("%s: episode %d landed, though the gateway never told its sender it was accepted", s.runKey, id)
		}
	}
	for id := range s.accepted {
		if seen[id] == 0 {
			t.Errorf("%s: episode %d was accepted and never landed", s.runKey, id)
		}
	}
	return len(seen)
}
