// Command ambientcost measures what ambient metrics (docs/system-metrics.md)
// add to a collector's CPU for one sampled run: the host and its
// processes, two GPUs from dcgm-exporter's recorded text and a vLLM
// server's, through the shipped overlays, sampled every -interval.
//
// Three collectors run side by side for the same window, so that the
// machine's noise falls on all three: bare (the demo config alone: the
// floor of an idle collector), debug (the overlays' receivers and
// processors into the debug exporter: the pipeline's floor) and prime (the
// overlays into the prime exporter, whose run is open). What prime adds
// over debug is the exporter's own work; over bare, all that turning the
// overlays on costs. It prints CPU per sample and, at 15 s, the share of
// one core.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/primeintellect/primeexporter/bench/internal/procstat"
	"github.com/primeintellect/primeexporter/internal/testkit/freeport"
	"github.com/primeintellect/primeexporter/internal/testkit/scrapetest"
)

func main() {
	bin := flag.String("collector", "_build/otelcol-prime/otelcol-prime", "the built collector")
	trainer := flag.String("trainer", "_build/demotrainer", "the built demo trainer")
	root := flag.String("root", ".", "the repository")
	interval := flag.Duration("interval", time.Second, "the sampling interval (PRIME_SYSTEM_INTERVAL)")
	window := flag.Duration("window", time.Minute, "how long CPU is measured")
	flag.Parse()
	if err := run(*bin, *trainer, *root, *interval, *window); err != nil {
		fmt.Fprintln(os.Stderr, "ambientcost:", err)
		os.Exit(1)
	}
}

type proc struct {
	name string
	cmd  *exec.Cmd
	http string
}

func run(bin, trainer, root string, interval, window time.Duration) error {
	dcgm, err := standIn(scrapetest.DCGM4GPU2Pods)
	if err != nil {
		return err
	}
	defer dcgm.Close()
	vllm, err := standIn(scrapetest.VLLMV1)
	if err != nil {
		return err
	}
	defer vllm.Close()
	work, err := os.MkdirTemp("", "ambientcost")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	debugOverlay := filepath.Join(work, "debug.yaml")
	if err := os.WriteFile(debugOverlay, []byte(`
exporters:
  debug: {verbosity: basic}
service:
  pipelines:
    metrics/prime-system: {exporters: [debug]}
    metrics/prime-gpu: {exporters: [debug]}
    metrics/prime-vllm: {exporters: [debug]}
`), 0o600); err != nil {
		return err
	}
	overlays := []string{"deploy/system-metrics.yaml", "deploy/gpu-metrics.yaml", "deploy/vllm-metrics.yaml"}
	var procs []*proc
	for _, c := range []struct {
		name     string
		overlays []string
	}{{"bare", nil}, {"debug", append(overlays, debugOverlay)}, {"prime", overlays}} {
		p, err := start(bin, root, work, c.name, c.overlays, interval, dcgm.Addr(), vllm.Addr())
		if err != nil {
			return err
		}
		defer func() { _ = p.cmd.Process.Kill(); _, _ = p.cmd.Process.Wait() }()
		procs = append(procs, p)
	}
	time.Sleep(3 * time.Second)
	// The run that prime's ambient data joins: opened, never ended.
	for _, p := range procs {
		out, err := exec.Command(trainer, "-endpoint", p.http, "-run-key", "ambient-cost", "-steps", "1", "-status", "none").CombinedOutput()
		if err != nil {
			return fmt.Errorf("demo trainer against %s: %v\n%s", p.name, err, out)
		}
	}
	time.Sleep(10 * time.Second) // past the prometheus receiver's first scrapes
	before := map[string]time.Duration{}
	for _, p := range procs {
		before[p.name], err = procstat.CPUTime(p.cmd.Process.Pid)
		if err != nil {
			return err
		}
	}
	time.Sleep(window)
	ticks := window.Seconds() / interval.Seconds()
	used := map[string]time.Duration{}
	for _, p := range procs {
		after, err := procstat.CPUTime(p.cmd.Process.Pid)
		if err != nil {
			return err
		}
		used[p.name] = after - before[p.name]
	}
	rows, keys, err := systemRows(filepath.Join(work, "prime"))
	if err != nil {
		return err
	}
	if rows == 0 {
		return fmt.Errorf("prime's run holds no system/ rows: its ambient data never joined it (see %s)", filepath.Join(work, "prime.log"))
	}
	perTick := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / ticks }
	fmt.Printf("window %s, sampling every %s: %.0f samples; prime's run holds %d system/ rows of %d keys\n", window, interval, ticks, rows, keys)
	fmt.Printf("%-6s %10s %14s\n", "", "CPU", "ms / sample")
	for _, p := range procs {
		fmt.Printf("%-6s %10s %14.2f\n", p.name, used[p.name].Round(time.Millisecond), perTick(used[p.name]))
	}
	exporter := perTick(used["prime"] - used["debug"])
	all := perTick(used["prime"] - used["bare"])
	fmt.Printf("prime over debug (the exporter's own work): %.2f ms a sample; prime / debug CPU = %.2f\n", exporter, float64(used["prime"])/float64(used["debug"]))
	fmt.Printf("prime over bare (the overlays turned on): %.2f ms a sample = %.3f %% of one core at 15 s\n", all, all/15000*100)
	return nil
}

func standIn(text []byte) (*scrapetest.Server, error) {
	s, err := scrapetest.New(text, 1)
	if err != nil {
		return nil, err
	}
	addr, err := freeport.Next()
	if err != nil {
		return nil, err
	}
	return s, s.Start(addr)
}

func start(bin, root, work, name string, overlays []string, interval time.Duration, dcgm, vllm string) (*proc, error) {
	ports := make([]string, 4)
	for i := range ports {
		a, err := freeport.Next()
		if err != nil {
			return nil, err
		}
		ports[i] = a
	}
	args := []string{"--config", filepath.Join(root, "testdata/demo-offline.yaml")}
	for _, o := range overlays {
		if !filepath.IsAbs(o) {
			o = filepath.Join(root, o)
		}
		args = append(args, "--config", o)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"PRIME_OTLP_HTTP="+ports[0], "PRIME_OTLP_GRPC="+ports[1], "PRIME_HEALTH_ENDPOINT="+ports[2], "PRIME_STATUS_ENDPOINT="+ports[3],
		"PRIME_OFFLINE_DIR="+filepath.Join(work, name), "PRIME_RUN_KEY=ambient-cost", "PRIME_SYSTEM_INTERVAL="+interval.String(),
		"PRIME_SYSTEM_PROCESS=otelcol-prime", "PRIME_DCGM_ENDPOINT="+dcgm, "PRIME_DCGM_POD=trainer-a-0", "PRIME_VLLM_ENDPOINT="+vllm)
	log, err := os.Create(filepath.Join(work, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &proc{name: name, cmd: cmd, http: ports[0]}, nil
}

// systemRows counts the metrics posts with system/ keys in the offline
// runs under dir, and their distinct keys.
func systemRows(dir string) (rows, keys int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", "metrics.jsonl"))
	if err != nil {
		return 0, 0, err
	}
	seen := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return 0, 0, err
		}
		for _, line := range strings.Split(string(raw), "\n") {
			var post struct {
				Metrics map[string]any `json:"metrics"`
			}
			if json.Unmarshal([]byte(line), &post) != nil {
				continue
			}
			n := 0
			for k := range post.Metrics {
				if strings.HasPrefix(k, "system/") {
					seen[k] = true
					n++
				}
			}
			if n > 0 {
				rows++
			}
		}
	}
	return rows, len(seen), nil
}
