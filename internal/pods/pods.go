// Package pods remembers which run each Kubernetes pod's trainer sends
// for, so that the metrics of that pod's GPUs, scraped by a node's
// collector, join that run. The exporter learns a pod from each trainer
// resource it takes in and asks when ambient metrics arrive; the
// primeambient processor does the same on a node. It is a leaf, pdata and
// nothing of the exporter's, so that learning a pod on an episode's path
// enters no package that holds more than the index.
package pods

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Resource attributes that name a Kubernetes pod: the semantic
// conventions' (a trainer's OTEL_RESOURCE_ATTRIBUTES from the downward
// API, or k8sattributes), and dcgm-exporter's labels once groupbyattrs has
// moved them onto the resource.
const (
	attrPodUID       = "k8s.pod.uid"
	attrPodName      = "k8s.pod.name"
	attrPodNamespace = "k8s.namespace.name"
	labelPod         = "pod"
	labelNamespace   = "namespace"
)

// Keys are the names res gives its pod by: its uid, and its namespace
// and name; none when it names no pod.
func Keys(res pcommon.Resource) []string {
	attrs := res.Attributes()
	str := func(k string) string {
		if v, ok := attrs.Get(k); ok && v.Type() == pcommon.ValueTypeStr {
			return v.Str()
		}
		return ""
	}
	var keys []string
	if uid := str(attrPodUID); uid != "" {
		keys = append(keys, "uid:"+uid)
	}
	ns, name := str(attrPodNamespace), str(attrPodName)
	if ns == "" && name == "" {
		ns, name = str(labelNamespace), str(labelPod)
	}
	if name != "" {
		keys = append(keys, "pod:"+ns+"/"+name)
	}
	return keys
}

// Index remembers which run each trainer pod sends for. It holds at most max pods; past that, the pod learned longest ago is
// forgotten first.
type Index struct {
	mu    sync.Mutex
	max   int
	runs  map[string]string // pod key → run key
	order []string          // pod keys, oldest first
}

// NewIndex remembers at most max pods.
func NewIndex(max int) *Index {
	return &Index{max: max, runs: map[string]string{}}
}

// Learn records that the pod keys names (Keys of a trainer's resource)
// sends for the run runKey names. A caller asks Keys first and the run key
// only when there are keys, so that a trainer outside Kubernetes pays for
// nothing but the look.
func (p *Index) Learn(keys []string, runKey string) {
	if runKey == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		if old, ok := p.runs[k]; ok {
			if old != runKey {
				p.runs[k] = runKey // a pod reused for a later run
			}
			continue
		}
		p.runs[k] = runKey
		p.order = append(p.order, k)
	}
	for len(p.order) > p.max {
		delete(p.runs, p.order[0])
		p.order = p.order[1:]
	}
}

// Run is the run key of res's pod, and the pod key it was found by; the
// pod key alone when no trainer of that pod was seen; neither when res
// names no pod.
func (p *Index) Run(res pcommon.Resource) (runKey, podKey string) {
	keys := Keys(res)
	if len(keys) == 0 {
		return "", ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		if r, ok := p.runs[k]; ok {
			return r, k
		}
	}
	return "", keys[len(keys)-1]
}
