package scrapetest

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// state advances an exposition the way a live exporter moves between two
// scrapes. Everything it draws comes from one seeded generator, so a seed
// and a number of scrapes give one text.
type state struct {
	rng      *rand.Rand
	counters []counter
	hists    []*histSeries
	sums     []*summarySeries
	gauges   []gaugeSeries
	fb       []fbPair
}

type counter struct {
	s        *sample
	lo, hi   float64 // increment per scrape, drawn in [lo, hi]
	integral bool
}

// histSeries is one histogram series: its buckets sorted by le, with
// _count and _sum (either may be missing in a malformed recording).
type histSeries struct {
	buckets []*sample
	les     []float64
	count   *sample
	sum     *sample
	model   observations
}

type summarySeries struct {
	count, sum *sample
	model      observations
}

// observations is what a histogram or summary observes: log-normal values
// around a median, perScrape[0]..perScrape[1] of them each scrape.
type observations struct {
	median, sigma float64
	integral      bool
	perScrape     [2]int
}

type gaugeSeries struct {
	s    *sample
	rule gaugeRule
	busy bool
}

// gaugeRule keeps a gauge in [lo, hi] and moves it half-way towards a
// target drawn each scrape from busy (or idle) [min, max].
type gaugeRule struct {
	lo, hi         float64
	busyLo, busyHi float64
	idleLo, idleHi float64
	integral       bool
}

// fbPair is one GPU's framebuffer: used moves, free follows, and their sum
// stays what the recording says.
type fbPair struct {
	used, free *sample
	total      float64
	busy       bool
}

func newState(e *exposition, seed int64) *state {
	st := &state{rng: rand.New(rand.NewPCG(uint64(seed), 0x5c4a9e7e57))}
	var fbUsed, fbFree *family
	for _, f := range e.fams {
		switch f.typ {
		case "counter":
			for _, s := range f.samples {
				if s.name == f.name || s.name == f.name+"_total" {
					st.counters = append(st.counters, newCounter(f.name, s))
				}
			}
		case "untyped":
			for _, s := range f.samples {
				if strings.HasSuffix(s.name, "_total") {
					st.counters = append(st.counters, newCounter(f.name, s))
				}
			}
		case "histogram":
			st.hists = append(st.hists, histograms(f)...)
		case "summary":
			st.sums = append(st.sums, summaries(f)...)
		case "gauge":
			switch f.name {
			case "DCGM_FI_DEV_FB_USED":
				fbUsed = f
				continue
			case "DCGM_FI_DEV_FB_FREE":
				fbFree = f
				continue
			}
			for _, s := range f.samples {
				if rule, ok := gaugeRuleFor(f.name, s.value); ok && finite(s.value) {
					st.gauges = append(st.gauges, gaugeSeries{s: s, rule: rule, busy: busy(s)})
				}
			}
		}
	}
	if fbUsed != nil && fbFree != nil {
		free := map[string]*sample{}
		for _, s := range fbFree.samples {
			free[s.labelText] = s
		}
		for _, u := range fbUsed.samples {
			if f := free[u.labelText]; f != nil && finite(u.value) && finite(f.value) {
				st.fb = append(st.fb, fbPair{used: u, free: f, total: u.value + f.value, busy: busy(u)})
			}
		}
	}
	return st
}

// busy says whether a series is under load: a GPU series is busy when
// dcgm-exporter attributes it to a pod; a series of no GPU (vLLM's) is a
// server at work.
func busy(s *sample) bool {
	if _, gpu := (Sample{Labels: s.labels}).Label("gpu"); !gpu {
		return true
	}
	pod, _ := Sample{Labels: s.labels}.Label("pod")
	return pod != ""
}

func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

func newCounter(family string, s *sample) counter {
	c := counter{s: s, lo: 1, hi: 10, integral: true}
	name := strings.ToLower(family)
	switch {
	case strings.Contains(name, "seconds"):
		c.lo, c.hi, c.integral = 0.01, 1, false
	case strings.Contains(name, "prompt_tokens"):
		c.lo, c.hi = 100, 3000
	case strings.Contains(name, "generation_tokens"):
		c.lo, c.hi = 50, 800
	case strings.Contains(name, "flops"):
		c.lo, c.hi = 1e12, 5e12
	case strings.Contains(name, "bytes"):
		c.lo, c.hi = 1e8, 1e9
	case strings.Contains(name, "energy_consumption"): // mJ
		c.lo, c.hi = 1e5, 1e6
	}
	if !finite(s.value) {
		c.lo, c.hi = 0, 0
	}
	return c
}

func histograms(f *family) []*histSeries {
	byKey := map[string]*histSeries{}
	var order []*histSeries
	get := func(s *sample) *histSeries {
		key := labelKey(s.labels, "le")
		h := byKey[key]
		if h == nil {
			h = &histSeries{}
			byKey[key] = h
			order = append(order, h)
		}
		return h
	}
	for _, s := range f.samples {
		switch strings.TrimPrefix(s.name, f.name) {
		case "_bucket":
			h := get(s)
			le, _ := Sample{Labels: s.labels}.Label("le")
			v, _ := parseValue(le)
			h.buckets = append(h.buckets, s)
			h.les = append(h.les, v)
		case "_count":
			get(s).count = s
		case "_sum":
			get(s).sum = s
		}
	}
	for _, h := range order {
		sort.Sort(byLe{h})
		h.model = observationsFor(f.name, h.les)
		if h.count != nil && h.sum != nil && h.count.value > 0 && h.sum.value > 0 {
			h.model.median = h.sum.value / h.count.value
		}
	}
	return order
}

type byLe struct{ h *histSeries }

func (b byLe) Len() int           { return len(b.h.les) }
func (b byLe) Less(i, j int) bool { return b.h.les[i] < b.h.les[j] }
func (b byLe) Swap(i, j int) {
	b.h.les[i], b.h.les[j] = b.h.les[j], b.h.les[i]
	b.h.buckets[i], b.h.buckets[j] = b.h.buckets[j], b.h.buckets[i]
}

func summaries(f *family) []*summarySeries {
	byKey := map[string]*summarySeries{}
	var order []*summarySeries
	for _, s := range f.samples {
		suffix := strings.TrimPrefix(s.name, f.name)
		if suffix != "_count" && suffix != "_sum" {
			continue
		}
		key := labelKey(s.labels, "quantile")
		m := byKey[key]
		if m == nil {
			m = &summarySeries{model: observationsFor(f.name, nil)}
			byKey[key] = m
			order = append(order, m)
		}
		if suffix == "_count" {
			m.count = s
		} else {
			m.sum = s
		}
	}
	return order
}

// labelKey identifies a series within a family: its labels but one.
func labelKey(labels []Label, except string) string {
	var b strings.Builder
	for _, l := range labels {
		if l.Name == except {
			continue
		}
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
		b.WriteByte(0)
	}
	return b.String()
}

// observationsFor picks what a histogram observes: vLLM's families by
// name (plausible medians for a small model serving RL rollouts), anything
// else around the bucket bound two fifths up its finite bounds.
func observationsFor(family string, les []float64) observations {
	o := observations{sigma: 1, perScrape: [2]int{1, 6}}
	name := strings.TrimPrefix(family, "vllm:")
	switch {
	case strings.HasSuffix(name, "time_to_first_token_seconds"):
		o.median, o.sigma = 0.12, 0.8
	case strings.HasSuffix(name, "inter_token_latency_seconds"):
		o.median, o.sigma, o.perScrape = 0.02, 0.4, [2]int{50, 250}
	case strings.HasSuffix(name, "time_per_output_token_seconds"):
		o.median, o.sigma = 0.02, 0.4
	case strings.HasSuffix(name, "e2e_request_latency_seconds"):
		o.median, o.sigma = 4, 0.7
	case strings.HasSuffix(name, "request_queue_time_seconds"):
		o.median, o.sigma = 0.01, 1.2
	case strings.HasSuffix(name, "request_prefill_time_seconds"):
		o.median, o.sigma = 0.1, 0.8
	case strings.HasSuffix(name, "request_decode_time_seconds"), strings.HasSuffix(name, "request_inference_time_seconds"):
		o.median, o.sigma = 3.5, 0.7
	case strings.HasSuffix(name, "request_prompt_tokens"), strings.HasSuffix(name, "request_prefill_kv_computed_tokens"):
		o.median, o.sigma, o.integral = 600, 0.9, true
	case strings.HasSuffix(name, "request_generation_tokens"):
		o.median, o.sigma, o.integral = 250, 0.8, true
	case strings.HasSuffix(name, "iteration_tokens_total"):
		o.median, o.sigma, o.integral, o.perScrape = 96, 1, true, [2]int{20, 80}
	case strings.HasSuffix(name, "request_params_n"):
		o.median, o.sigma, o.integral = 1, 0, true
	case strings.HasSuffix(name, "request_params_max_tokens"), strings.HasSuffix(name, "request_max_num_generation_tokens"):
		o.median, o.sigma, o.integral = 1024, 0.5, true
	case strings.HasPrefix(name, "http_request_duration"):
		o.median = 0.002
	default:
		var bounds []float64
		for _, le := range les {
			if finite(le) && le > 0 {
				bounds = append(bounds, le)
			}
		}
		o.median = 1
		if len(bounds) > 0 {
			o.median = bounds[(len(bounds)-1)*2/5]
		}
	}
	return o
}

func (o observations) draw(rng *rand.Rand) float64 {
	x := o.median * math.Exp(o.sigma*rng.NormFloat64())
	if o.integral {
		x = math.Max(1, math.Round(x))
	}
	return x
}

func (o observations) count(rng *rand.Rand) int {
	return o.perScrape[0] + rng.IntN(o.perScrape[1]-o.perScrape[0]+1)
}

func gaugeRuleFor(name string, v0 float64) (gaugeRule, bool) {
	switch name {
	case "DCGM_FI_DEV_GPU_UTIL":
		return gaugeRule{lo: 0, hi: 100, busyLo: 75, busyHi: 100, idleLo: 0, idleHi: 3, integral: true}, true
	case "DCGM_FI_DEV_MEM_COPY_UTIL":
		return gaugeRule{lo: 0, hi: 100, busyLo: 20, busyHi: 60, idleLo: 0, idleHi: 1, integral: true}, true
	case "DCGM_FI_DEV_GPU_TEMP":
		return gaugeRule{lo: 20, hi: 90, busyLo: 60, busyHi: 78, idleLo: 28, idleHi: 35, integral: true}, true
	case "DCGM_FI_DEV_POWER_USAGE":
		if v0 <= 0 {
			return gaugeRule{}, false
		}
		hi := v0 * 4.5
		return gaugeRule{lo: v0 / 2, hi: hi, busyLo: 0.75 * hi, busyHi: 0.98 * hi, idleLo: 0.9 * v0, idleHi: 1.1 * v0}, true
	case "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
		return gaugeRule{lo: 0, hi: 1, busyLo: 0.7, busyHi: 0.99, idleLo: 0, idleHi: 0.02}, true
	case "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":
		return gaugeRule{lo: 0, hi: 1, busyLo: 0.2, busyHi: 0.6, idleLo: 0, idleHi: 0.01}, true
	case "DCGM_FI_PROF_DRAM_ACTIVE":
		return gaugeRule{lo: 0, hi: 1, busyLo: 0.3, busyHi: 0.7, idleLo: 0, idleHi: 0.02}, true
	case "vllm:num_requests_running":
		return gaugeRule{lo: 0, hi: 32, busyLo: 2, busyHi: 16, integral: true}, true
	case "vllm:num_requests_waiting":
		return gaugeRule{lo: 0, hi: 64, busyLo: 0, busyHi: 8, integral: true}, true
	}
	if strings.HasSuffix(name, "_perc") { // vLLM's cache usage: 1 means 100 percent
		return gaugeRule{lo: 0, hi: 1, busyLo: 0.05, busyHi: 0.95, idleLo: 0, idleHi: 0.05}, true
	}
	return gaugeRule{}, false
}

func (st *state) uniform(lo, hi float64) float64 { return lo + (hi-lo)*st.rng.Float64() }

// advance moves every series one scrape on.
func (st *state) advance() {
	for _, c := range st.counters {
		if c.hi <= 0 {
			continue
		}
		inc := st.uniform(c.lo, c.hi)
		if c.integral {
			inc = math.Max(1, math.Round(inc))
		}
		c.s.set(c.s.value + inc)
	}
	for _, h := range st.hists {
		n := h.model.count(st.rng)
		var sum float64
		for range n {
			x := h.model.draw(st.rng)
			sum += x
			for i, le := range h.les {
				if x <= le {
					h.buckets[i].set(h.buckets[i].value + 1)
				}
			}
		}
		if h.count != nil {
			h.count.set(h.count.value + float64(n))
		}
		if h.sum != nil {
			h.sum.set(h.sum.value + sum)
		}
	}
	for _, m := range st.sums {
		n := m.model.count(st.rng)
		var sum float64
		for range n {
			sum += m.model.draw(st.rng)
		}
		if m.count != nil {
			m.count.set(m.count.value + float64(n))
		}
		if m.sum != nil {
			m.sum.set(m.sum.value + sum)
		}
	}
	for _, g := range st.gauges {
		r := g.rule
		lo, hi := r.idleLo, r.idleHi
		if g.busy {
			lo, hi = r.busyLo, r.busyHi
		}
		v := g.s.value + (st.uniform(lo, hi)-g.s.value)/2
		if r.integral {
			v = math.Round(v)
		}
		g.s.set(math.Min(r.hi, math.Max(r.lo, v)))
	}
	for _, p := range st.fb {
		target := p.used.value
		if p.busy {
			target = p.total * st.uniform(0.6, 0.92)
		}
		used := math.Min(p.total, math.Max(0, math.Round(p.used.value+(target-p.used.value)/2)))
		p.used.set(used)
		p.free.set(p.total - used)
	}
}
