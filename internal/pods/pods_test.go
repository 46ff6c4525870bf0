package pods

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func res(attrs ...string) pcommon.Resource {
	r := pcommon.NewResource()
	for i := 0; i+1 < len(attrs); i += 2 {
		r.Attributes().PutStr(attrs[i], attrs[i+1])
	}
	return r
}

func TestAGPUsPodFindsTheRunItsTrainerAnnouncedByNamespaceAndName(t *testing.T) {
	p := NewIndex(8)
	p.Learn(Keys(res("k8s.namespace.name", "rl", "k8s.pod.name", "trainer-a-0", "prime.run.key", "a")), "run-a")
	p.Learn(Keys(res("k8s.namespace.name", "rl", "k8s.pod.name", "trainer-b-0")), "run-b")

	// dcgm-exporter's labels, moved onto the resource by groupbyattrs.
	if run, pod := p.Run(res("namespace", "rl", "pod", "trainer-b-0")); run != "run-b" || pod != "pod:rl/trainer-b-0" {
		t.Fatalf("got run %q pod %q", run, pod)
	}
	if run, _ := p.Run(res("k8s.namespace.name", "rl", "k8s.pod.name", "trainer-a-0")); run != "run-a" {
		t.Fatalf("got run %q", run)
	}
	// Same name, another namespace: another pod.
	if run, pod := p.Run(res("namespace", "other", "pod", "trainer-a-0")); run != "" || pod != "pod:other/trainer-a-0" {
		t.Fatalf("another namespace's pod found run %q (pod %q)", run, pod)
	}
	if run, pod := p.Run(res("host.name", "node-1")); run != "" || pod != "" {
		t.Fatalf("a resource with no pod found run %q pod %q", run, pod)
	}
}

func TestAPodUIDBindsAsWellAsItsName(t *testing.T) {
	p := NewIndex(8)
	p.Learn(Keys(res("k8s.pod.uid", "0b6f", "k8s.namespace.name", "rl", "k8s.pod.name", "t-0")), "run-a")
	if run, _ := p.Run(res("k8s.pod.uid", "0b6f")); run != "run-a" {
		t.Fatalf("by uid: %q", run)
	}
	if run, _ := p.Run(res("namespace", "rl", "pod", "t-0")); run != "run-a" {
		t.Fatalf("by name: %q", run)
	}
}

func TestAPodReusedForALaterRunBindsToTheLaterOne(t *testing.T) {
	p := NewIndex(8)
	p.Learn(Keys(res("k8s.namespace.name", "rl", "k8s.pod.name", "t-0")), "run-1")
	p.Learn(Keys(res("k8s.namespace.name", "rl", "k8s.pod.name", "t-0")), "run-2")
	if run, _ := p.Run(res("namespace", "rl", "pod", "t-0")); run != "run-2" {
		t.Fatalf("got %q", run)
	}
}

func TestAnIndexRemembersAtMostItsBoundForgettingTheOldestFirst(t *testing.T) {
	p := NewIndex(2)
	for _, name := range []string{"a", "b", "c"} {
		p.Learn(Keys(res("k8s.namespace.name", "rl", "k8s.pod.name", name)), "run-"+name)
	}
	if run, _ := p.Run(res("namespace", "rl", "pod", "a")); run != "" {
		t.Fatalf("the oldest pod is still known: %q", run)
	}
	for _, name := range []string{"b", "c"} {
		if run, _ := p.Run(res("namespace", "rl", "pod", name)); run != "run-"+name {
			t.Fatalf("pod %s: %q", name, run)
		}
	}
}
