//go:build flood

package e2e

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The flooder runs in a process of its own, this test binary again
// (TestFloodSenderProcess), at the niceness PRIME_FLOOD_NICE (0). A
// flooding tenant's senders are on its own machines, not the gateway's:
// what the test measures is what the gateway's handling of the flood costs
// the others, so the test's own process (the others' senders, the clocks
// that time them, the fake platform) shares no Go scheduler with the
// flood's goroutines. PRIME_FLOOD_NICE=19 also leaves the flood only the
// CPU nothing else wants. The report gives what it tried a second, so a
// flooder too starved to flood shows.

// floodNiceness is PRIME_FLOOD_NICE, 0 unless set.
func floodNiceness(t *testing.T) int {
	return envInt(t, "PRIME_FLOOD_NICE", 0)
}

// floodChildEnv carries the order of the flooder's process, as JSON.
const floodChildEnv = "PRIME_FLOOD_CHILD"

// floodOrder is what the flooder's process sends, and where.
type floodOrder struct {
	Addr, CAFile, Key, RunKey, Team string
	FillerBytes                     int
	Kind                            floodKind
	Load                            floodLoad
	Span                            time.Duration
}

// floodResult is what the flooder's process reports.
type floodResult struct {
	Tried, Taken, Throttled int64
	Failed                  string
}

// startFlooder starts the flooder's process for order and waits until it
// is ready to send; go starts it, and wait returns its result.
func startFlooder(t *testing.T, order floodOrder) (start func(), wait func() floodResult) {
	t.Helper()
	raw, err := json.Marshal(order)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nice", "-n", strconv.Itoa(floodNiceness(t)), os.Args[0], "-test.run=^TestFloodSenderProcess$", "-test.timeout=0")
	cmd.Env = append(os.Environ(), floodChildEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	next := func(prefix string) string {
		for lines.Scan() {
			if rest, ok := strings.CutPrefix(lines.Text(), prefix); ok {
				return rest
			}
		}
		_ = cmd.Wait()
		t.Fatalf("the flooder's process ended before saying %q", prefix)
		return ""
	}
	next("flooder ready")
	start = func() {
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	wait = func() floodResult {
		var r floodResult
		if err := json.Unmarshal([]byte(next("flooder result ")), &r); err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, stdout)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the flooder's process: %v", err)
		}
		return r
	}
	return start, wait
}

// TestFloodSenderProcess is the flooder's process of a flood phase; run
// without its order, it returns at once.
func TestFloodSenderProcess(t *testing.T) {
	raw := os.Getenv(floodChildEnv)
	if raw == "" {
		return
	}
	var o floodOrder
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(o.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	g := &mtGateway{httpAddr: o.Addr, caFile: o.CAFile, roots: x509.NewCertPool()}
	if !g.roots.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in " + o.CAFile)
	}
	s := newTenantSender(g, o.Key, o.RunKey, o.Team)
	s.filler = strings.Repeat("x", o.FillerBytes)
	send := prepareFlood(s, o.Kind, o.Load)
	fmt.Println("flooder ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Span)
	defer cancel()
	taken, failed := send(ctx)
	out, _ := json.Marshal(floodResult{
		Tried: s.attemptedRecords.Load(), Taken: taken + int64(s.acceptedIDs()), Throttled: s.throttled.Load(), Failed: failed,
	})
	fmt.Println("flooder result " + string(out))
}

// prepareFlood builds what the flooder of kind sends, before the clock
// starts, and returns the send, which floods until ctx ends and returns
// the records a blind flood got accepted (the others count theirs in s)
// and what failed.
func prepareFlood(s *tenantSender, kind floodKind, load floodLoad) func(ctx context.Context) (int64, string) {
	var (
		wg     sync.WaitGroup
		failed atomic.Value
		taken  atomic.Int64
	)
	finish := func() (int64, string) {
		wg.Wait()
		msg, _ := failed.Load().(string)
		return taken.Load(), msg
	}
	switch kind {
	case atLimit:
		return func(ctx context.Context) (int64, string) {
			pace(ctx, &wg, float64(load.Limit)/float64(load.Episodes), func() {
				if _, err := s.deliver(ctx, s.nextRequest(load.Episodes)); err != nil {
					failed.Store(fmt.Sprintf("the flooder: %v", err))
				}
			})
			return finish()
		}
	case blindFlood:
		perSecond := 10 * float64(load.Limit) / float64(load.Episodes)
		// A second's worth of requests, sent round and round. A repeat is
		// the same episodes again, which costs the gateway its receiving,
		// mapping and de-duplication but no upload.
		bodies := make([][]byte, int(perSecond)+1)
		for k := range bodies {
			bodies[k] = s.nextRequest(load.Episodes).body
		}
		var next atomic.Int64
		return func(ctx context.Context) (int64, string) {
			pace(ctx, &wg, perSecond, func() {
				body := bodies[int(next.Add(1)-1)%len(bodies)]
				if code, _, err := s.post(ctx, body, load.Episodes); err == nil && code == 200 {
					taken.Add(int64(load.Episodes))
				}
			})
			return finish()
		}
	case sdkFlood:
		return func(ctx context.Context) (int64, string) {
			for range load.SDKs {
				wg.Go(func() {
					for ctx.Err() == nil {
						if _, err := s.deliver(ctx, s.nextRequest(load.Episodes)); err != nil {
							failed.Store(fmt.Sprintf("the flooder: %v", err))
							return
						}
					}
				})
			}
			return finish()
		}
	}
	return func(context.Context) (int64, string) { return 0, "" }
}

// pace starts send on wg every 1/perSecond s until ctx ends.
func pace(ctx context.Context, wg *sync.WaitGroup, perSecond float64, send func()) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			wg.Go(send)
		}
	}
}
