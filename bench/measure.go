package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/primeintellect/primeexporter/internal/testkit/freeport"

	"github.com/primeintellect/primeexporter/bench/internal/procstat"
)

// result is one measured run of one configuration.
type result struct {
	config   string
	wall     time.Duration // first send → last episode landed
	cpu      time.Duration // the collector's, over the same window
	harness  time.Duration // this process's (senders, target, scrapes), over the same window
	peakRSS  int64         // the collector's VmHWM at the end, bytes
	peakQ    int64         // the most the exporter's sending queue held, bytes (sampled)
	retries  int64         // requests the receiver refused and the senders sent again
	episodes int64         // landed, as the target counts them
}

// runOptions are what every measured run shares.
type runOptions struct {
	collector string        // the bench collector binary
	agent     string        // the agent collector binary (primeAgent)
	workDir   string        // configs and collector logs
	senders   int           // concurrent OTLP clients
	timeout   time.Duration // bound on one run, from first send to last landing
	queueMiB  int           // every measured exporter's sending queue
}

// measure runs one configuration on one load: a fresh collector and target,
// the clock from the first request sent to the last episode landed. With
// profile set, it also writes a CPU profile of the collector over about
// profileFor into that file.
func measure(ctx context.Context, o runOptions, l *load, config string, mode overflowMode, rep int, profile string, profileFor time.Duration) (result, error) {
	name := fmt.Sprintf("%s-%s-%s-rep%d", l.spec.name, mode, config, rep)
	if profile != "" {
		name = fmt.Sprintf("%s-%s-%s-profile", l.spec.name, mode, config)
	}
	var (
		c   *collector
		tgt target
		tel telemetry
		cfg collectorConfig
		err error
	)
	for attempt := 1; ; attempt++ {
		c, tgt, tel, cfg, err = launch(ctx, o, config, mode, name, profile != "")
		// A port free when picked can be taken (by a client's ephemeral
		// port) before the collector binds it: pick again, not a failed run.
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		progress("%s: a picked port was taken before the collector bound it; starting again on new ports", name)
	}
	if err != nil {
		return result{}, fmt.Errorf("%s: %w", name, err)
	}
	defer tgt.close()
	defer c.stop()

	var profiled <-chan error
	cpu0, err := procstat.CPUTimes(c.pids())
	if err != nil {
		return result{}, err
	}
	own0, err := threadGroupCPU()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	if profile != "" {
		profiled = fetchProfile(ctx, cfg.pprofAddr, profileFor, profile)
	}

	runCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	peakQ := sampleQueue(runCtx, tel)
	retries, err := sendAll(runCtx, cfg.grpcAddr, cfg.bearer, l, o.senders)
	if err != nil {
		return result{}, fmt.Errorf("%s: sending: %w\n%s", name, err, c.tail(20))
	}
	landed, err := waitLanded(runCtx, tgt, c, int64(l.spec.episodes))
	wall := time.Since(start)
	own1, ownErr := threadGroupCPU()
	cancel()
	q := <-peakQ
	if err != nil {
		return result{}, fmt.Errorf("%s: %d of %d episodes landed: %w\n%s", name, landed, l.spec.episodes, err, diagnose(ctx, tel, c))
	}
	cpu1, err := procstat.CPUTimes(c.pids())
	if err != nil {
		return result{}, err
	}
	if ownErr != nil {
		return result{}, ownErr
	}
	hwm, err := procstat.PeakRSSes(c.pids())
	if err != nil {
		return result{}, err
	}
	if problems := anomalies(ctx, tel, landed, int64(l.spec.episodes)); problems != "" {
		progress("%s: %s", name, problems)
	}
	if profiled != nil {
		if err := <-profiled; err != nil {
			return result{}, fmt.Errorf("%s: profile: %w", name, err)
		}
	}
	return result{config: config, wall: wall, cpu: cpu1 - cpu0, harness: own1 - own0, peakRSS: hwm, peakQ: q, retries: retries, episodes: landed}, nil
}

// launch starts a fresh target and a collector for it on newly picked
// loopback ports (and a pprof endpoint when profiled).
func launch(ctx context.Context, o runOptions, config string, mode overflowMode, name string, profiled bool) (*collector, target, telemetry, collectorConfig, error) {
	var cfg collectorConfig
	addrs := make([]string, 2, 3)
	if profiled {
		addrs = addrs[:3]
	}
	for i := range addrs {
		a, err := freeport.Next()
		if err != nil {
			return nil, nil, telemetry{}, cfg, err
		}
		addrs[i] = a
	}
	metricsHost, port, _ := net.SplitHostPort(addrs[1])
	metricsPort, _ := strconv.Atoi(port)
	tel := newTelemetry(addrs[1])
	tgt, err := newTarget(config, tel)
	if err != nil {
		return nil, nil, tel, cfg, err
	}
	id, yaml := tgt.exporter()
	cfg = collectorConfig{grpcAddr: addrs[0], metricsHost: metricsHost, metricsPort: metricsPort, exporterID: id, exporterYAML: yaml, block: mode == block, queueMiB: o.queueMiB}
	if a, ok := tgt.(authTarget); ok {
		cfg.authYAML, cfg.bearer = a.auth()
	}
	if profiled {
		cfg.pprofAddr = addrs[2]
	}
	c, err := startCollector(ctx, o.collector, o.workDir, name, cfg)
	if err != nil {
		tgt.close()
		return nil, nil, tel, cfg, err
	}
	if config == primeAgent {
		// The senders send to the agent; the gateway's telemetry (its
		// queue) stays the one read.
		front, err := startAgent(ctx, o, name, cfg)
		if err != nil {
			c.stop()
			tgt.close()
			return nil, nil, tel, cfg, err
		}
		c.front, cfg.grpcAddr = front, front.grpcAddr
	}
	return c, tgt, tel, cfg, nil
}

// sampleQueue polls the collector's otelcol_exporter_queue_size (bytes,
// with the bytes sizer) every 20 ms until ctx ends, then sends the largest
// value seen: whether a configuration's memory is its queue filling up
// (the exporter draining slower than the receiver fills) or its own.
func sampleQueue(ctx context.Context, tel telemetry) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var peak int64
		defer func() { out <- peak }()
		for {
			if ss, err := tel.scrape(ctx); err == nil {
				for _, s := range ss {
					if s.name == "otelcol_exporter_queue_size" {
						peak = max(peak, int64(s.value))
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return out
}

// waitLanded polls the target until want episodes have landed. Polling
// every 10 ms bounds the clock's error well below the runs' seconds.
func waitLanded(ctx context.Context, tgt target, c *collector, want int64) (int64, error) {
	var got int64
	for {
		n, err := tgt.delivered(ctx)
		if err == nil {
			got = n
		}
		if got >= want {
			return got, nil
		}
		if err := c.exited(); err != nil {
			return got, err
		}
		select {
		case <-ctx.Done():
			return got, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// diagnose lists the collector's counters that explain missing episodes:
// what its exporters failed to send and what prime rejected or skipped.
func diagnose(ctx context.Context, tel telemetry, c *collector) string {
	ss, err := tel.scrape(ctx)
	if err != nil {
		return fmt.Sprintf("(no telemetry: %v)\n%s", err, c.tail(20))
	}
	out := ""
	for _, s := range ss {
		switch s.name {
		case "otelcol_exporter_sent_log_records", "otelcol_exporter_send_failed_log_records",
			"otelcol_exporter_prime_records_rejected", "otelcol_exporter_prime_records_skipped",
			"otelcol_receiver_accepted_log_records", "otelcol_receiver_refused_log_records":
			out += fmt.Sprintf("  %s{%s} %g\n", s.name, s.labels, s.value)
		}
	}
	return out + c.tail(20)
}

// anomalies names what would make a run's figures wrong though it ended:
// episodes landed twice, or counted as failed, rejected or skipped.
func anomalies(ctx context.Context, tel telemetry, landed, sent int64) string {
	var out []string
	if landed != sent {
		out = append(out, fmt.Sprintf("%d episodes landed for %d sent", landed, sent))
	}
	ss, err := tel.scrape(ctx)
	if err != nil {
		return strings.Join(append(out, fmt.Sprintf("no telemetry: %v", err)), "; ")
	}
	for _, name := range []string{"otelcol_exporter_send_failed_log_records", "otelcol_exporter_prime_records_rejected",
		"otelcol_exporter_prime_records_skipped", "otelcol_receiver_refused_log_records"} {
		if v := sum(ss, name, ""); v != 0 {
			out = append(out, fmt.Sprintf("%s = %g", name, v))
		}
	}
	return strings.Join(out, "; ")
}

// startAgent starts an agent (o.agent) in front of the gateway cfg
// describes, on new loopback ports.
func startAgent(ctx context.Context, o runOptions, name string, cfg collectorConfig) (*collector, error) {
	if o.agent == "" {
		return nil, fmt.Errorf("%s needs -agent, the agent collector (scripts/build-agent.sh)", primeAgent)
	}
	grpcAddr, err := freeport.Next()
	if err != nil {
		return nil, err
	}
	metricsAddr, err := freeport.Next()
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(metricsAddr)
	metricsPort, _ := strconv.Atoi(port)
	front, err := startCollector(ctx, o.agent, o.workDir, name+"-agent", agentConfig(grpcAddr, host, metricsPort, cfg.grpcAddr, cfg.block, cfg.queueMiB))
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	front.grpcAddr = grpcAddr
	return front, nil
}
