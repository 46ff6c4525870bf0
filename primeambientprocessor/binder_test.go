package primeambientprocessor

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

const scrapeScope = "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// add appends a resource of one scope with attrs to md.
func add(md pmetric.Metrics, scope string, attrs ...string) {
	rm := md.ResourceMetrics().AppendEmpty()
	for i := 0; i+1 < len(attrs); i += 2 {
		rm.Resource().Attributes().PutStr(attrs[i], attrs[i+1])
	}
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scope)
	m := sm.Metrics().AppendEmpty()
	m.SetName("x")
	m.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(1)
}

// runsOf lists each resource's run identity ("" for none), in order.
func runsOf(md pmetric.Metrics) []string {
	var out []string
	for _, rm := range md.ResourceMetrics().All() {
		id, _ := identityOf(rm.Resource())
		out = append(out, id.value)
	}
	return out
}

func process(t *testing.T, b *binder, md pmetric.Metrics) []string {
	t.Helper()
	out, err := b.metrics(context.Background(), md)
	if err != nil {
		t.Fatal(err)
	}
	return runsOf(out)
}

func TestAGPUOfAnAnnouncedPodTakesItsRunsIdentityAndAnotherPodsKeepsNone(t *testing.T) {
	b := newBinder(8, time.Minute, time.Now)
	md := pmetric.NewMetrics()
	add(md, "trainer", "prime.run.key", "run-a", "k8s.namespace.name", "rl", "k8s.pod.name", "trainer-a-0")
	add(md, scrapeScope, "namespace", "rl", "pod", "trainer-a-0")
	add(md, scrapeScope, "namespace", "rl", "pod", "trainer-b-0")
	if got := process(t, b, md); !slices.Equal(got, []string{"run-a", "run-a", ""}) {
		t.Fatalf("runs %v, want the trainer's, its GPU's, and none for an unannounced pod", got)
	}
}

func TestAHostedRunsPodIsStampedWithItsRunID(t *testing.T) {
	b := newBinder(8, time.Minute, time.Now)
	logs := plog.NewLogs()
	res := logs.ResourceLogs().AppendEmpty().Resource()
	res.Attributes().PutStr("prime.run.id", "run-77")
	res.Attributes().PutStr("k8s.pod.uid", "0b6f")
	if _, err := b.logs(context.Background(), logs); err != nil {
		t.Fatal(err)
	}
	md := pmetric.NewMetrics()
	add(md, scrapeScope, "k8s.pod.uid", "0b6f")
	out, _ := b.metrics(context.Background(), md)
	v, ok := out.ResourceMetrics().At(0).Resource().Attributes().Get("prime.run.id")
	if !ok || v.Str() != "run-77" {
		t.Fatalf("prime.run.id = %v, want run-77 (learned from the trainer's logs)", v.AsString())
	}
}

func TestTheNodesOwnMetricsGoToEveryRunOnTheNodeOnceEach(t *testing.T) {
	c := &clock{time.Unix(0, 0)}
	b := newBinder(8, time.Minute, c.now)
	md := pmetric.NewMetrics()
	add(md, "trainer", "prime.run.key", "run-a", "k8s.pod.name", "a")
	add(md, "trainer", "prime.run.key", "run-b", "k8s.pod.name", "b")
	process(t, b, md)

	host := pmetric.NewMetrics()
	add(host, scrapeScope, "host.name", "node-1")
	got := process(t, b, host)
	slices.Sort(got)
	if !slices.Equal(got, []string{"run-a", "run-b"}) {
		t.Fatalf("the node's metrics went to %v, want one copy for each of run-a and run-b", got)
	}

	c.t = c.t.Add(2 * time.Minute) // past node_run_ttl without a trainer's data
	host = pmetric.NewMetrics()
	add(host, scrapeScope, "host.name", "node-1")
	if got := process(t, b, host); !slices.Equal(got, []string{""}) {
		t.Fatalf("after the runs went quiet the node's metrics went to %v, want none", got)
	}
}

func TestAmbientDataThatNamesItsRunAlreadyIsLeftAlone(t *testing.T) {
	b := newBinder(8, time.Minute, time.Now)
	md := pmetric.NewMetrics()
	add(md, "trainer", "prime.run.key", "run-a", "k8s.pod.name", "p")
	add(md, scrapeScope, "prime.run.key", "run-z", "pod", "p")
	if got := process(t, b, md); !slices.Equal(got, []string{"run-a", "run-z"}) {
		t.Fatalf("runs %v", got)
	}
}

func TestATrainersResourceIsNeverStamped(t *testing.T) {
	b := newBinder(8, time.Minute, time.Now)
	md := pmetric.NewMetrics()
	add(md, "trainer", "prime.run.key", "run-a", "k8s.pod.name", "p")
	add(md, "trainer", "k8s.pod.name", "p") // a trainer's resource without identity
	if got := process(t, b, md); !slices.Equal(got, []string{"run-a", ""}) {
		t.Fatalf("runs %v: a trainer's resource was given an identity", got)
	}
}

func TestConfigNamesEachKeyOutOfRange(t *testing.T) {
	err := (&Config{MaxPods: 0, NodeRunTTL: 0}).Validate()
	if err == nil {
		t.Fatal("a zero config passed")
	}
	for _, key := range []string{"max_pods", "node_run_ttl"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("%q does not name %s", err, key)
		}
	}
	if err := createDefaultConfig().(*Config).Validate(); err != nil {
		t.Fatalf("the defaults are invalid: %v", err)
	}
}
