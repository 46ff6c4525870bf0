package scrapetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/primeintellect/primeexporter/internal/testkit/freeport"
)

func newServer(t *testing.T, text []byte, seed int64) *Server {
	t.Helper()
	s, err := New(text, seed)
	require.NoError(t, err)
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// client scrapes like Prometheus does: over kept-alive connections.
type client struct{ hc *http.Client }

func newClient(t *testing.T) *client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &client{hc: &http.Client{Transport: tr, Timeout: 5 * time.Second}}
}

func (c *client) get(url string) (*http.Response, string, error) {
	resp, err := c.hc.Get(url)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, string(body), err
}

// scrape fetches /metrics and requires a 200 with the text format's type.
func (c *client) scrape(t *testing.T, s *Server) string {
	t.Helper()
	resp, body, err := c.get(s.URL())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, "text/plain; version=0.0.4", resp.Header.Get("Content-Type"))
	return body
}

func parse(t *testing.T, text string) []Family {
	t.Helper()
	fams, err := Parse([]byte(text))
	require.NoError(t, err)
	return fams
}

func byName(fams []Family) map[string]Family {
	m := map[string]Family{}
	for _, f := range fams {
		m[f.Name] = f
	}
	return m
}

func labelNames(s Sample) []string {
	var names []string
	for _, l := range s.Labels {
		names = append(names, l.Name)
	}
	return names
}

func label(t *testing.T, s Sample, name string) string {
	t.Helper()
	v, ok := s.Label(name)
	require.True(t, ok, "%s has no label %s", s.Name, name)
	return v
}

// bucketsOf is one histogram series: (le, count) sorted by le, _count, _sum.
type histogramSeries struct {
	les, counts []float64
	count, sum  float64
}

func histogramsOf(t *testing.T, f Family) map[string]*histogramSeries {
	t.Helper()
	out := map[string]*histogramSeries{}
	get := func(s Sample) *histogramSeries {
		key := labelKey(s.Labels, "le")
		if out[key] == nil {
			out[key] = &histogramSeries{}
		}
		return out[key]
	}
	for _, s := range f.Samples {
		switch strings.TrimPrefix(s.Name, f.Name) {
		case "_bucket":
			h := get(s)
			le, err := parseValue(label(t, s, "le"))
			require.NoError(t, err)
			h.les, h.counts = append(h.les, le), append(h.counts, s.Value)
		case "_count":
			get(s).count = s.Value
		case "_sum":
			get(s).sum = s.Value
		}
	}
	for key, h := range out {
		require.True(t, sort.Float64sAreSorted(h.les), "%s%s: buckets not written in le order", f.Name, key)
		for i := 1; i < len(h.counts); i++ {
			require.GreaterOrEqual(t, h.counts[i], h.counts[i-1], "%s: bucket le=%v below le=%v", f.Name, h.les[i], h.les[i-1])
		}
		if len(h.les) > 0 {
			require.True(t, math.IsInf(h.les[len(h.les)-1], 1), "%s: no +Inf bucket", f.Name)
			require.Equal(t, h.counts[len(h.counts)-1], h.count, "%s: _count is not the +Inf bucket", f.Name)
		}
	}
	return out
}

func TestTheDCGMTextHasEveryMetricForFourGPUsAndTheirPods(t *testing.T) {
	require.NoError(t, checkExposition(string(DCGM4GPU2Pods)))
	fams := parse(t, string(DCGM4GPU2Pods))
	require.Len(t, fams, 23, "the families of the recording")
	m := byName(fams)
	for _, name := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP"} {
		f, ok := m[name]
		require.True(t, ok, "no %s", name)
		assert.Equal(t, "gauge", f.Type, name)
		assert.NotEmpty(t, f.Help, name)
	}
	assert.Equal(t, "counter", m["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"].Type)
	assert.Equal(t, "Framebuffer memory used (in MiB).", m["DCGM_FI_DEV_FB_USED"].Help)

	// dcgm-exporter's order: its fixed labels, then the attributes sorted.
	order := []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION", "container", "namespace", "pod", "pod_uid"}
	pods := []string{"trainer-a-0", "trainer-a-0", "trainer-b-0", "trainer-b-0"}
	uuids := map[string]string{}
	for _, f := range fams {
		require.Len(t, f.Samples, 4, "%s: one line per GPU", f.Name)
		for i, s := range f.Samples {
			assert.Equal(t, order, labelNames(s), f.Name)
			gpu := fmt.Sprint(i)
			assert.Equal(t, gpu, label(t, s, "gpu"))
			assert.Equal(t, "nvidia"+gpu, label(t, s, "device"))
			assert.Equal(t, "NVIDIA L4", label(t, s, "modelName"))
			assert.Equal(t, "i-030791dc5a37cd257", label(t, s, "Hostname"))
			assert.Equal(t, "rl", label(t, s, "namespace"))
			assert.Equal(t, "trainer", label(t, s, "container"))
			assert.Equal(t, pods[i], label(t, s, "pod"), "%s gpu %d", f.Name, i)
			uuid := label(t, s, "UUID")
			assert.Regexp(t, `^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, uuid)
			if was, ok := uuids[gpu]; ok {
				assert.Equal(t, was, uuid, "GPU %s changes UUID in %s", gpu, f.Name)
			}
			uuids[gpu] = uuid
		}
	}
	distinct := map[string]bool{}
	for _, u := range uuids {
		distinct[u] = true
	}
	assert.Len(t, distinct, 4, "a UUID per GPU")
}

func TestTheVLLMTextHasTheV1FamiliesWithCumulativeBuckets(t *testing.T) {
	require.NoError(t, checkExposition(string(VLLMV1)))
	m := byName(parse(t, string(VLLMV1)))
	want := map[string]string{
		"vllm:num_requests_running":                  "gauge",
		"vllm:num_requests_waiting":                  "gauge",
		"vllm:kv_cache_usage_perc":                   "gauge",
		"vllm:prompt_tokens_total":                   "counter",
		"vllm:generation_tokens_total":               "counter",
		"vllm:request_success_total":                 "counter",
		"vllm:time_to_first_token_seconds":           "histogram",
		"vllm:e2e_request_latency_seconds":           "histogram",
		"vllm:inter_token_latency_seconds":           "histogram",
		"vllm:request_time_per_output_token_seconds": "histogram",
		"vllm:request_queue_time_seconds":            "histogram",
		"vllm:iteration_tokens_total":                "histogram",
	}
	for name, typ := range want {
		f, ok := m[name]
		require.True(t, ok, "no %s", name)
		assert.Equal(t, typ, f.Type, name)
		require.NotEmpty(t, f.Samples, name)
		for _, s := range f.Samples {
			assert.Equal(t, "0", label(t, s, "engine"), s.Name)
			assert.Equal(t, "Qwen/Qwen2.5-0.5B-Instruct", label(t, s, "model_name"), s.Name)
		}
	}
	hists := 0
	for _, f := range m {
		if f.Type == "histogram" && len(f.Samples) > 0 {
			hists++
			for _, h := range histogramsOf(t, f) {
				assert.NotEmpty(t, h.les, "%s has buckets", f.Name)
			}
		}
	}
	assert.Equal(t, 16, hists, "histogram families with samples: vLLM's 15 and the HTTP server's")
	ttft := histogramsOf(t, m["vllm:time_to_first_token_seconds"])
	require.Len(t, ttft, 1)
	for _, h := range ttft {
		assert.Len(t, h.les, 23, "vLLM's TTFT buckets, +Inf included")
	}
}

func TestTheFirstScrapeIsTheRecordingByteForByte(t *testing.T) {
	c := newClient(t)
	for _, text := range [][]byte{DCGM4GPU2Pods, VLLMV1} {
		s := newServer(t, text, 1)
		assert.Equal(t, string(text), c.scrape(t, s))
	}
}

// scrapes serves n scrapes and parses each.
func scrapes(t *testing.T, c *client, s *Server, n int) (texts []string, parsed [][]Family) {
	t.Helper()
	for range n {
		body := c.scrape(t, s)
		require.NoError(t, checkExposition(body), "scrape %d", len(texts)+1)
		texts = append(texts, body)
		parsed = append(parsed, parse(t, body))
	}
	return texts, parsed
}

func isCounter(f Family, s Sample) bool {
	return f.Type == "counter" && (s.Name == f.Name || s.Name == f.Name+"_total") ||
		f.Type == "untyped" && strings.HasSuffix(s.Name, "_total")
}

func TestCountersGrowAndHistogramsStayCumulativeScrapeAfterScrape(t *testing.T) {
	c := newClient(t)
	for _, text := range [][]byte{DCGM4GPU2Pods, VLLMV1} {
		s := newServer(t, text, 7)
		_, parsed := scrapes(t, c, s, 15)
		counters, hists := 0, 0
		for k := 1; k < len(parsed); k++ {
			prev, cur := parsed[k-1], parsed[k]
			require.Len(t, cur, len(prev))
			for fi := range cur {
				pf, cf := prev[fi], cur[fi]
				require.Equal(t, pf.Name, cf.Name)
				require.Equal(t, pf.Type, cf.Type)
				require.Len(t, cf.Samples, len(pf.Samples), cf.Name)
				for si := range cf.Samples {
					ps, cs := pf.Samples[si], cf.Samples[si]
					require.Equal(t, ps.Name, cs.Name)
					require.Equal(t, ps.Labels, cs.Labels, "labels of %s changed", cs.Name)
					if isCounter(cf, cs) {
						counters++
						require.Greater(t, cs.Value, ps.Value, "counter %s%v did not grow at scrape %d", cs.Name, cs.Labels, k+1)
					}
				}
				if cf.Type != "histogram" {
					continue
				}
				ph, ch := histogramsOf(t, pf), histogramsOf(t, cf)
				for key, h := range ch {
					hists++
					p := ph[key]
					require.NotNil(t, p)
					require.Greater(t, h.count, p.count, "%s took no observation at scrape %d", cf.Name, k+1)
					require.Greater(t, h.sum, p.sum, "%s: _sum did not grow with _count", cf.Name)
					for i := range h.counts {
						require.GreaterOrEqual(t, h.counts[i], p.counts[i], "%s bucket le=%v went down", cf.Name, h.les[i])
					}
				}
			}
		}
		require.Positive(t, counters)
		if string(text) == string(VLLMV1) {
			require.Positive(t, hists)
		}
	}
}

func TestHistogramObservationsFallWhereVLLMsWould(t *testing.T) {
	c := newClient(t)
	s := newServer(t, VLLMV1, 3)
	_, parsed := scrapes(t, c, s, 40)
	m := byName(parsed[len(parsed)-1])
	share := func(family string, le float64) float64 {
		for _, h := range histogramsOf(t, m[family]) {
			for i, b := range h.les {
				if b == le {
					return h.counts[i] / h.count
				}
			}
			t.Fatalf("%s has no bucket le=%v", family, le)
		}
		t.Fatalf("no %s", family)
		return 0
	}
	// Time to first token around 0.12 s: most under a second, few under 20 ms.
	assert.Greater(t, share("vllm:time_to_first_token_seconds", 1), 0.85)
	assert.Less(t, share("vllm:time_to_first_token_seconds", 0.02), 0.15)
	// Inter-token latency around 20 ms.
	assert.Greater(t, share("vllm:inter_token_latency_seconds", 0.1), 0.95)
	assert.Less(t, share("vllm:inter_token_latency_seconds", 0.01), 0.2)
	// End to end around 4 s: more than a second, mostly under 20.
	assert.Less(t, share("vllm:e2e_request_latency_seconds", 1), 0.15)
	assert.Greater(t, share("vllm:e2e_request_latency_seconds", 20), 0.9)
	// n is always 1.
	assert.Equal(t, 1.0, share("vllm:request_params_n", 1))
}

func TestGaugesMoveWithinPlausibleBounds(t *testing.T) {
	c := newClient(t)
	dcgm := newServer(t, DCGM4GPU2Pods, 11)
	_, parsed := scrapes(t, c, dcgm, 30)
	recorded := byName(parse(t, string(DCGM4GPU2Pods)))
	total := recorded["DCGM_FI_DEV_FB_USED"].Samples[0].Value + recorded["DCGM_FI_DEV_FB_FREE"].Samples[0].Value
	power0 := recorded["DCGM_FI_DEV_POWER_USAGE"].Samples[0].Value
	utilMoved, fbMoved := false, false
	for k, fams := range parsed {
		m := byName(fams)
		for gpu := range 4 {
			util := m["DCGM_FI_DEV_GPU_UTIL"].Samples[gpu].Value
			require.True(t, util >= 0 && util <= 100, "util %v", util)
			require.Equal(t, math.Round(util), util)
			temp := m["DCGM_FI_DEV_GPU_TEMP"].Samples[gpu].Value
			require.True(t, temp >= 20 && temp <= 90, "temperature %v", temp)
			used, free := m["DCGM_FI_DEV_FB_USED"].Samples[gpu].Value, m["DCGM_FI_DEV_FB_FREE"].Samples[gpu].Value
			require.Equal(t, total, used+free, "scrape %d gpu %d: FB used %v + free %v", k+1, gpu, used, free)
			require.GreaterOrEqual(t, used, 0.0)
			power := m["DCGM_FI_DEV_POWER_USAGE"].Samples[gpu].Value
			require.True(t, power >= power0/2 && power <= power0*4.5, "power %v", power)
			for _, ratio := range []string{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"} {
				v := m[ratio].Samples[gpu].Value
				require.True(t, v >= 0 && v <= 1, "%s %v", ratio, v)
			}
			if k >= 10 {
				// Every GPU belongs to a training pod: busy by now.
				utilMoved = utilMoved || util >= 50
				fbMoved = fbMoved || used > 0.5*total
			}
		}
	}
	assert.True(t, utilMoved, "the GPUs of training pods never got busy")
	assert.True(t, fbMoved, "the framebuffer of training pods never filled")

	vllm := newServer(t, VLLMV1, 11)
	_, parsed = scrapes(t, c, vllm, 30)
	kvMoved := false
	for _, fams := range parsed {
		m := byName(fams)
		kv := m["vllm:kv_cache_usage_perc"].Samples[0].Value
		require.True(t, kv >= 0 && kv <= 1, "kv cache usage %v", kv)
		kvMoved = kvMoved || kv > 0
		for _, n := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting"} {
			v := m[n].Samples[0].Value
			require.True(t, v >= 0 && v == math.Round(v), "%s %v", n, v)
		}
		// A gauge with no rule keeps its recorded value.
		assert.Equal(t, 1.0, m["vllm:engine_sleep_state"].Samples[0].Value)
		assert.Equal(t, 1.7740113846e+09, m["process_start_time_seconds"].Samples[0].Value)
	}
	assert.True(t, kvMoved)
}

func TestEverythingButTheValuesStaysAsRecorded(t *testing.T) {
	c := newClient(t)
	valueAtEnd := regexp.MustCompile(` [^ ]+$`)
	for _, text := range [][]byte{DCGM4GPU2Pods, VLLMV1} {
		s := newServer(t, text, 5)
		texts, _ := scrapes(t, c, s, 8)
		want := strings.Split(string(text), "\n")
		changed := 0
		for _, body := range texts {
			got := strings.Split(body, "\n")
			require.Len(t, got, len(want))
			for i := range want {
				if want[i] == "" || strings.HasPrefix(want[i], "#") {
					require.Equal(t, want[i], got[i], "line %d", i+1)
					continue
				}
				require.Equal(t, valueAtEnd.ReplaceAllString(want[i], ""), valueAtEnd.ReplaceAllString(got[i], ""), "line %d", i+1)
				if want[i] != got[i] {
					changed++
				}
			}
		}
		assert.Positive(t, changed, "no value ever changed")
	}
}

func TestASeedMakesTheScrapesRepeatable(t *testing.T) {
	c := newClient(t)
	a, b, other := newServer(t, VLLMV1, 42), newServer(t, VLLMV1, 42), newServer(t, VLLMV1, 43)
	ta, _ := scrapes(t, c, a, 5)
	tb, _ := scrapes(t, c, b, 5)
	to, _ := scrapes(t, c, other, 5)
	assert.Equal(t, ta, tb)
	assert.NotEqual(t, ta[4], to[4])
}

func TestDownRefusesScrapesUntilTheServerComesBackOnTheSamePort(t *testing.T) {
	s, err := New(VLLMV1, 1)
	require.NoError(t, err)
	addr := freeport.Addr(t)
	require.NoError(t, s.Start(addr))
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	require.Equal(t, addr, s.Addr())
	require.Equal(t, "http://"+addr+"/metrics", s.URL())

	c := newClient(t)
	first := c.scrape(t, s) // leaves a kept-alive connection open
	require.NoError(t, s.SetMode(Down))
	assert.Equal(t, Down, s.Mode())
	_, _, err = c.get(s.URL())
	require.Error(t, err, "a scrape over the kept-alive connection")
	_, _, err = newClient(t).get(s.URL())
	require.True(t, errors.Is(err, syscall.ECONNREFUSED), "a new connection: %v", err)
	assert.Equal(t, 1, s.Scrapes(), "a refused scrape is not counted")

	require.NoError(t, s.SetMode(Normal))
	assert.Equal(t, addr, s.Addr())
	second := c.scrape(t, s)
	assert.NotEqual(t, first, second, "the server came back where it was, one step on")
	assert.Equal(t, 2, s.Scrapes())
}

func TestStartingDownListensOnlyOnceTheModeChanges(t *testing.T) {
	s, err := New(DCGM4GPU2Pods, 1)
	require.NoError(t, err)
	require.NoError(t, s.SetMode(Down))
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	require.NotEqual(t, "127.0.0.1:0", s.Addr(), "the port is known")
	_, _, err = newClient(t).get(s.URL())
	require.True(t, errors.Is(err, syscall.ECONNREFUSED), "%v", err)
	require.NoError(t, s.SetMode(Normal))
	assert.Equal(t, string(DCGM4GPU2Pods), newClient(t).scrape(t, s))
}

func TestUnavailableAnswers503WithoutAdvancing(t *testing.T) {
	c := newClient(t)
	s, twin := newServer(t, VLLMV1, 9), newServer(t, VLLMV1, 9)
	c.scrape(t, s)
	require.NoError(t, s.SetMode(Unavailable))
	for range 3 {
		resp, _, err := c.get(s.URL())
		require.NoError(t, err)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	}
	require.NoError(t, s.SetMode(Normal))
	got := c.scrape(t, s)
	want, _ := scrapes(t, c, twin, 2)
	assert.Equal(t, want[1], got, "the scrape after the outage is the second step")
	assert.Equal(t, 5, s.Scrapes(), "503 answers are counted")
}

func TestGarbageIsAnOKAnswerThatIsNotTheTextFormat(t *testing.T) {
	c := newClient(t)
	s := newServer(t, DCGM4GPU2Pods, 1)
	require.NoError(t, s.SetMode(Garbage))
	resp, body, err := c.get(s.URL())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/plain; version=0.0.4", resp.Header.Get("Content-Type"))
	assert.Equal(t, GarbageBody, body)
	assert.Error(t, checkExposition(body))
	_, err = Parse([]byte(body))
	assert.Error(t, err)
	assert.Equal(t, 1, s.Scrapes())
	require.NoError(t, s.SetMode(Normal))
	assert.Equal(t, string(DCGM4GPU2Pods), c.scrape(t, s), "garbage did not advance the text")
}

// withoutLabel removes one label from every line that has it.
func withoutLabel(text, name string) string {
	return regexp.MustCompile(`,?`+name+`="[^"]*"`).ReplaceAllString(text, "")
}

func TestChurningLabelsGiveTheNamedFamilyANewLabelValueEveryScrape(t *testing.T) {
	c := newClient(t)
	s, twin := newServer(t, VLLMV1, 4), newServer(t, VLLMV1, 4)
	require.NoError(t, s.SetChurn("vllm:prompt_tokens_total", "request_id", 1))
	require.NoError(t, s.SetMode(ChurningLabels))
	texts, parsed := scrapes(t, c, s, 4)
	normal, _ := scrapes(t, c, twin, 4)
	seen := map[string]bool{}
	for k := range texts {
		f := byName(parsed[k])["vllm:prompt_tokens_total"]
		require.Len(t, f.Samples, 1)
		id := label(t, f.Samples[0], "request_id")
		assert.Equal(t, fmt.Sprint(k+1), id)
		assert.False(t, seen[id], "request_id %s came back", id)
		seen[id] = true
		assert.Equal(t, normal[k], withoutLabel(texts[k], "request_id"), "scrape %d: only the churned family changes", k+1)
		assert.Equal(t, 1, strings.Count(texts[k], "request_id="))
	}

	// Several new values a scrape, on a histogram: every line of a series
	// gets the same value, so the series stays whole.
	require.NoError(t, s.SetChurn("vllm:time_to_first_token_seconds", "request_id", 3))
	body := c.scrape(t, s)
	require.NoError(t, checkExposition(body))
	h := byName(parse(t, body))["vllm:time_to_first_token_seconds"]
	ids := map[string]int{}
	for _, smp := range h.Samples {
		ids[label(t, smp, "request_id")]++
	}
	assert.Equal(t, map[string]int{"5": 25, "6": 25, "7": 25}, ids, "23 buckets, _count and _sum for each new value")

	// Back to Normal: no extra label.
	require.NoError(t, s.SetMode(Normal))
	assert.NotContains(t, c.scrape(t, s), "request_id")
}

func TestChurningWithoutSetChurnChurnsTheFirstCounter(t *testing.T) {
	c := newClient(t)
	s := newServer(t, DCGM4GPU2Pods, 1)
	require.NoError(t, s.SetMode(ChurningLabels))
	body := c.scrape(t, s)
	f := byName(parse(t, body))["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
	require.Len(t, f.Samples, 4)
	for _, smp := range f.Samples {
		assert.Equal(t, "1", label(t, smp, "request_id"))
		assert.Equal(t, "request_id", smp.Labels[len(smp.Labels)-1].Name, "appended after the recorded labels")
	}
	assert.Equal(t, 4, strings.Count(body, "request_id="))

	assert.Error(t, s.SetChurn("no_such_family", "request_id", 1))
	assert.Error(t, s.SetChurn("DCGM_FI_DEV_GPU_UTIL", "pod", 1), "a label the family has")
	assert.Error(t, s.SetChurn("DCGM_FI_DEV_GPU_UTIL", "le", 1))
	assert.Error(t, s.SetChurn("DCGM_FI_DEV_GPU_UTIL", "request id", 1))
	assert.Error(t, s.SetChurn("DCGM_FI_DEV_GPU_UTIL", "request_id", 0))
}

func TestWaitScrapesReturnsOnceTheServerHasAnsweredThatMany(t *testing.T) {
	s := newServer(t, VLLMV1, 1)
	c := newClient(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 3 {
			if _, _, err := c.get(s.URL()); err != nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, s.WaitScrapes(ctx, 3))
	<-done
	assert.Equal(t, 3, s.Scrapes())

	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	err := s.WaitScrapes(short, 4)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestCloseStopsServingAndLeavesNoGoroutine(t *testing.T) {
	before := goleak.IgnoreCurrent()
	s, err := New(DCGM4GPU2Pods, 1)
	require.NoError(t, err)
	require.NoError(t, s.Start("127.0.0.1:0"))
	tr := &http.Transport{}
	c := &client{hc: &http.Client{Transport: tr, Timeout: 5 * time.Second}}
	c.scrape(t, s)
	require.NoError(t, s.SetMode(Down))
	require.NoError(t, s.SetMode(ChurningLabels))
	c.scrape(t, s)
	require.NoError(t, s.Close())
	tr.CloseIdleConnections()
	_, _, err = c.get(s.URL())
	assert.Error(t, err)
	assert.NoError(t, s.Close(), "a second Close")
	assert.Error(t, s.SetMode(Normal))
	assert.Error(t, s.Start("127.0.0.1:0"))
	tr.CloseIdleConnections()
	goleak.VerifyNone(t, before)
}

func TestStartRefusesASecondStartAndABusyAddress(t *testing.T) {
	s := newServer(t, VLLMV1, 1)
	assert.Error(t, s.Start("127.0.0.1:0"))
	other, err := New(VLLMV1, 1)
	require.NoError(t, err)
	assert.Error(t, other.Start(s.Addr()), "the address is taken")
	assert.NoError(t, other.Close())
}

func TestOnlyMetricsIsServed(t *testing.T) {
	s := newServer(t, VLLMV1, 1)
	c := newClient(t)
	resp, _, err := c.get("http://" + s.Addr() + "/")
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, err = c.hc.Post(s.URL(), "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, 0, s.Scrapes())
	assert.Error(t, s.SetMode(Mode(99)))
}

func TestValuesAreWrittenAsTheRecordingWritesThem(t *testing.T) {
	for _, text := range [][]byte{DCGM4GPU2Pods, VLLMV1} {
		e, err := parseExposition(string(text))
		require.NoError(t, err)
		for _, f := range e.fams {
			for _, s := range f.samples {
				assert.Equal(t, s.valueText, s.style.format(s.value), "%s", s.name)
			}
		}
	}
	// prometheus_client's floatToGoString, and dcgm-exporter's %d and %f.
	for v, want := range map[float64]string{
		0:                      "0.0",
		3:                      "3.0",
		0.5:                    "0.5",
		-2.5:                   "-2.5",
		16.22:                  "16.22",
		999999:                 "999999.0",
		1e6:                    "1e+06",
		1.048576e+06:           "1.048576e+06",
		1.7740114612872875e+09: "1.7740114612872875e+09",
		1.1701968896e+10:       "1.1701968896e+010",
		7.358146831393242e-05:  "7.358146831393242e-05",
		0.0001:                 "0.0001",
		1e16:                   "1e+16",
		math.Inf(1):            "+Inf",
	} {
		assert.Equal(t, want, pythonGoString(v), "%v", v)
		if math.IsInf(v, 0) {
			assert.Equal(t, want, styleOf("0.0").format(v))
		}
	}
	assert.Equal(t, "23", styleOf("405").format(22.6))
	assert.Equal(t, "71.250000", styleOf("16.365000").format(71.25))
}

func TestLabelEscapingAndSpacingSurviveEveryScrape(t *testing.T) {
	text := "# a comment the server keeps\n" +
		"# HELP x_total A help with a \\\\ backslash and a \\n newline.\n" +
		"x_total{path=\"a\\\"b\\\\c\\nd\",  b = \"2\" , } 1 1700000000000\n" +
		"y 0.5\n"
	fams, err := Parse([]byte(text))
	require.NoError(t, err)
	require.Len(t, fams, 2)
	assert.Equal(t, "untyped", fams[0].Type)
	assert.Equal(t, "A help with a \\ backslash and a \n newline.", fams[0].Help)
	assert.Equal(t, []Label{{"path", "a\"b\\c\nd"}, {"b", "2"}}, fams[0].Samples[0].Labels)

	c := newClient(t)
	s := newServer(t, []byte(text), 1)
	require.NoError(t, s.SetChurn("x_total", "request_id", 1))
	assert.Equal(t, text, c.scrape(t, s))
	second := c.scrape(t, s)
	lines := strings.Split(second, "\n")
	assert.Regexp(t, `^x_total\{path="a\\"b\\\\c\\nd",  b = "2" , \} (\d+) 1700000000000$`, lines[2])
	assert.NotEqual(t, "x_total{path=\"a\\\"b\\\\c\\nd\",  b = \"2\" , } 1 1700000000000", lines[2], "an untyped _total counts up")
	assert.Equal(t, "y 0.5", lines[3], "an untyped gauge stays")
	require.NoError(t, s.SetMode(ChurningLabels))
	churned := strings.Split(c.scrape(t, s), "\n")[2]
	assert.Regexp(t, `^x_total\{path="a\\"b\\\\c\\nd",  b = "2" ,request_id="1"\} \d+ 1700000000000$`, churned)
}

func TestParseRefusesWhatIsNotTheTextFormat(t *testing.T) {
	for name, text := range map[string]string{
		"html":                   GarbageBody,
		"unclosed label value":   "x{a=\"1} 1\n",
		"no value":               "x{a=\"1\"}\n",
		"bad value":              "x abc\n",
		"bad timestamp":          "x 1 soon\n",
		"label twice":            "x{a=\"1\",a=\"2\"} 1\n",
		"unknown escape":         "x{a=\"\\t\"} 1\n",
		"second TYPE":            "# TYPE x counter\n# TYPE x counter\n",
		"unknown type":           "# TYPE x meter\n",
		"bucket without le":      "# TYPE x histogram\nx_bucket{a=\"b\"} 1\n",
		"bucket with a bad le":   "# TYPE x histogram\nx_bucket{le=\"high\"} 1\n",
		"histogram's own sample": "# TYPE x histogram\nx 1\n",
		"TYPE after samples":     "x 1\n# TYPE x gauge\n",
		"hexadecimal value":      "x 0x1p-2\n",
	} {
		_, err := Parse([]byte(text))
		assert.Error(t, err, name)
		_, err = New([]byte(text), 1)
		assert.Error(t, err, name)
	}
}
