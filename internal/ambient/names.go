package ambient

// Prefix is what every ambient key starts with, as W&B's system metrics do.
const Prefix = "system/"

const mib = 1.0 / (1 << 20)

// recipe turns one known metric's points into keys. A point's key is
// keys[its `by` attribute's value] (keys[""] when by is empty); points the
// recipe leaves out (only, not) give nothing; the attributes not in keep
// are dropped, and points that then share a key and a time are summed, or
// averaged over the distinct values of meanOver. scale converts the unit.
type recipe struct {
	keys     map[string]string
	by       string
	only     map[string]string // attribute → the value a point must have
	not      map[string]string // attribute → a value that leaves a point out
	keep     []string
	meanOver string
	scale    float64
	// counter: a counter's running total as a sum, or, once deltatorate
	// made it a gauge, its rate, whose key ends "_per_s".
	counter bool
	// hidden: read only to derive other keys (derive.go), not sent.
	hidden bool
}

func one(key string) map[string]string { return map[string]string{"": key} }

// recipes is the naming table: the metric's name as its receiver gives it
// → its recipe. docs/system-metrics.md prints the same table beside W&B's
// names; names_test.go holds the two together.
var recipes = map[string]recipe{
	// hostmetrics: the host.
	"system.cpu.utilization":        {keys: one("cpu.percent"), not: map[string]string{"state": "idle"}, meanOver: "cpu", scale: 100},
	"system.memory.utilization":     {keys: one("memory.percent"), only: map[string]string{"state": "used"}, scale: 100},
	"system.memory.usage":           {keys: one("memory.used_mib"), only: map[string]string{"state": "used"}, scale: mib},
	"system.filesystem.utilization": {keys: one("disk.percent"), keep: []string{"mountpoint"}, scale: 100},
	"system.disk.io":                {by: "direction", keys: map[string]string{"read": "disk.read_mib", "write": "disk.write_mib"}, scale: mib, counter: true},
	"system.network.io": {by: "direction", keys: map[string]string{"receive": "network.recv_mib", "transmit": "network.sent_mib"},
		not: map[string]string{"device": "lo"}, scale: mib, counter: true},
	"system.cpu.load_average.1m": {keys: one("cpu.load_1m"), scale: 1},
	// hostmetrics: a process (its pid and name come from the resource).
	"process.memory.usage":    {keys: one("proc.rss_mib"), scale: mib},
	"process.cpu.utilization": {keys: one("proc.cpu_percent"), scale: 100},
	"process.threads":         {keys: one("proc.threads"), scale: 1},
	// NVIDIA dcgm-exporter: a GPU.
	"DCGM_FI_DEV_GPU_UTIL":          {keys: one("gpu.util_percent"), keep: []string{"gpu"}, scale: 1},
	"DCGM_FI_DEV_FB_USED":           {keys: one("gpu.memory_used_mib"), keep: []string{"gpu"}, scale: 1},
	"DCGM_FI_DEV_FB_FREE":           {keys: one("gpu.memory_free_mib"), keep: []string{"gpu"}, scale: 1, hidden: true},
	"DCGM_FI_DEV_POWER_USAGE":       {keys: one("gpu.power_w"), keep: []string{"gpu"}, scale: 1},
	"DCGM_FI_DEV_GPU_TEMP":          {keys: one("gpu.temp_c"), keep: []string{"gpu"}, scale: 1},
	"DCGM_FI_DEV_MEM_COPY_UTIL":     {keys: one("gpu.memory_util_percent"), keep: []string{"gpu"}, scale: 1},
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE": {keys: one("gpu.engine_active_percent"), keep: []string{"gpu"}, scale: 100},
	// vLLM (V1; V0's cache gauge had another name).
	"vllm:kv_cache_usage_perc":     {keys: one("vllm.kv_cache_percent"), keep: []string{"engine"}, scale: 100},
	"vllm:gpu_cache_usage_perc":    {keys: one("vllm.kv_cache_percent"), keep: []string{"engine"}, scale: 100},
	"vllm:num_requests_running":    {keys: one("vllm.requests_running"), keep: []string{"engine"}, scale: 1},
	"vllm:num_requests_waiting":    {keys: one("vllm.requests_waiting"), keep: []string{"engine"}, scale: 1},
	"vllm:prompt_tokens_total":     {keys: one("vllm.prompt_tokens"), keep: []string{"engine"}, scale: 1, counter: true},
	"vllm:prompt_tokens":           {keys: one("vllm.prompt_tokens"), keep: []string{"engine"}, scale: 1, counter: true},
	"vllm:generation_tokens_total": {keys: one("vllm.generation_tokens"), keep: []string{"engine"}, scale: 1, counter: true},
	"vllm:generation_tokens":       {keys: one("vllm.generation_tokens"), keep: []string{"engine"}, scale: 1, counter: true},
	"vllm:num_preemptions_total":   {keys: one("vllm.preemptions"), keep: []string{"engine"}, scale: 1, counter: true},
	"vllm:num_preemptions":         {keys: one("vllm.preemptions"), keep: []string{"engine"}, scale: 1, counter: true},
	// vLLM's latency histograms: their count, mean and percentiles
	// (internal/stepmetrics) under these names.
	"vllm:time_to_first_token_seconds":   {keys: one("vllm.ttft_s"), keep: []string{"engine"}},
	"vllm:e2e_request_latency_seconds":   {keys: one("vllm.e2e_latency_s"), keep: []string{"engine"}},
	"vllm:inter_token_latency_seconds":   {keys: one("vllm.itl_s"), keep: []string{"engine"}},
	"vllm:time_per_output_token_seconds": {keys: one("vllm.itl_s"), keep: []string{"engine"}},
	"vllm:request_queue_time_seconds":    {keys: one("vllm.queue_time_s"), keep: []string{"engine"}},
}

// droppedLabels describe a scrape or a piece of hardware rather than the
// series: a metric without a recipe keeps every other attribute.
var droppedLabels = map[string]bool{
	"UUID": true, "device": true, "modelName": true, "Hostname": true, "pci_bus_id": true,
	"DCGM_FI_DRIVER_VERSION": true, "pod": true, "namespace": true, "container": true,
	"model_name": true, "instance": true, "job": true, "pod_uid": true,
}

// scrapeMeta are the prometheus receiver's own series about each scrape:
// up is read for failed scrapes (Translate), the rest are not charts.
func scrapeMeta(name string) bool {
	switch name {
	case "up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling", "scrape_series_added":
		return true
	}
	return false
}
