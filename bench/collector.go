package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// defaultQueueMiB is the sending queue's size unless -queue-mib says
// otherwise: about what the consumers hold in flight (4 × 8 MiB), the size
// issue 45's targets are measured at. Issue 11 chose 256 MiB, as deep as
// memory allows, before the backlog's cost below was known.
const defaultQueueMiB = 32

// sendingQueue is the one queue every exporter under test gets (issue 11):
// in memory, bytes sizer, queueMiB (32 MiB by default), 4 consumers,
// batches of 1–8 MiB or 200 ms. With block, a full queue pushes back on
// the senders (block_on_overflow: true) rather than refuse their
// requests, which the senders then send again (see overflowModes).
//
// The size matters only to an exporter slower than the senders, whose
// queue fills: a backlog of 256 MiB of received bodies costs prime more
// CPU per episode than one of 32 MiB (each body is copied into memory
// that has gone cold, then read cold again; docs/performance.md has the
// figures), a cost debug never pays because it never falls behind.
func sendingQueue(block bool, queueMiB int) string {
	return fmt.Sprintf(`
    sending_queue:
      enabled: true
      sizer: bytes
      queue_size: %d
      num_consumers: 4
      block_on_overflow: %t
      batch:
        sizer: bytes
        min_size: 1048576
        max_size: 8388608
        flush_timeout: 200ms`, queueMiB<<20, block)
}

// collectorConfig is one measured collector: the otlp gRPC receiver, one
// exporter, the collector's own metrics in Prometheus form (debug's
// completion is read there) and, when profiling, the pprof extension.
type collectorConfig struct {
	grpcAddr, metricsHost string
	metricsPort           int
	exporterID            string
	exporterYAML          string
	pprofAddr             string // "": no pprof extension
	block                 bool   // block_on_overflow
	queueMiB              int    // the sending queue's size
	// authYAML is the prime_auth extension's config: the receiver then
	// takes the sender's metadata and checks its key ("": no auth).
	authYAML string
	bearer   string // the key the senders present, with authYAML
}

func (c collectorConfig) render() string {
	var b strings.Builder
	var exts []string
	if c.pprofAddr != "" || c.authYAML != "" {
		b.WriteString("extensions:\n")
	}
	if c.pprofAddr != "" {
		fmt.Fprintf(&b, "  pprof:\n    endpoint: %s\n", c.pprofAddr)
		exts = append(exts, "pprof")
	}
	auth := ""
	if c.authYAML != "" {
		b.WriteString(strings.TrimPrefix(c.authYAML, "\n") + "\n")
		exts = append(exts, "prime_auth")
		auth = `
        include_metadata: true
        auth:
          authenticator: prime_auth`
	}
	fmt.Fprintf(&b, `receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s%s
exporters:
  %s:%s%s
service:
`, c.grpcAddr, auth, c.exporterID, c.exporterYAML, sendingQueue(c.block, c.queueMiB))
	if len(exts) > 0 {
		fmt.Fprintf(&b, "  extensions: [%s]\n", strings.Join(exts, ", "))
	}
	fmt.Fprintf(&b, `  pipelines:
    logs:
      receivers: [otlp]
      exporters: [%s]
  telemetry:
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: %s
                port: %d
                without_units: true
                without_type_suffix: true
                without_scope_info: true
`, c.exporterID, c.metricsHost, c.metricsPort)
	return b.String()
}

// collector is a running collector process.
type collector struct {
	cmd  *exec.Cmd
	log  string // its stdout and stderr
	done chan struct{}
	err  error // how it ended, once done is closed
	// front is the agent the senders send to, when the collector is a
	// gateway behind one (primeAgent); stop stops it first.
	front    *collector
	grpcAddr string // an agent's receiver
}

// agentConfig is an agent in front of the gateway at gatewayAddr, as
// deploy/agent.yaml routes (by the run's key) but in memory and without
// TLS: the same queue every measured exporter gets, on load_balancing.
func agentConfig(grpcAddr, metricsHost string, metricsPort int, gatewayAddr string, block bool, queueMiB int) collectorConfig {
	return collectorConfig{grpcAddr: grpcAddr, metricsHost: metricsHost, metricsPort: metricsPort, block: block, queueMiB: queueMiB,
		exporterID: "load_balancing", exporterYAML: fmt.Sprintf(`
    routing_key: attributes
    routing_attributes: [prime.run.id, prime.run.key]
    resolver:
      static:
        hostnames: [%s]
    protocol:
      otlp:
        compression: snappy
        tls:
          insecure: true
        sending_queue:
          enabled: false`, gatewayAddr)}
}

// startCollector writes the config under dir as name.yaml and starts bin on
// it, its output to name.log. It returns once the process serves its
// telemetry and the receiver accepts connections.
func startCollector(ctx context.Context, bin, dir, name string, cfg collectorConfig) (*collector, error) {
	cfgPath := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.render()), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer out.Close() // the child holds its own descriptor
	c := &collector{cmd: exec.Command(bin, "--config", cfgPath), log: logPath, done: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = out, out
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	if err := c.waitReady(ctx, cfg, 60*time.Second); err != nil {
		c.stop()
		return nil, fmt.Errorf("%w\n%s", err, c.tail(20))
	}
	return c, nil
}

// pids are the measured processes: the collector, and its front agent.
func (c *collector) pids() []int {
	if c.front != nil {
		return append(c.front.pids(), c.cmd.Process.Pid)
	}
	return []int{c.cmd.Process.Pid}
}

// ended says the process itself has ended.
func (c *collector) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// exited is non-nil once the process (or its front agent) has ended.
func (c *collector) exited() error {
	if c.front != nil {
		if err := c.front.exited(); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	select {
	case <-c.done:
		return fmt.Errorf("the collector exited: %v", c.err)
	default:
		return nil
	}
}

func (c *collector) waitReady(ctx context.Context, cfg collectorConfig, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tel := newTelemetry(net.JoinHostPort(cfg.metricsHost, fmt.Sprint(cfg.metricsPort)))
	for {
		if err := c.exited(); err != nil {
			return err
		}
		_, telErr := tel.scrape(ctx)
		conn, dialErr := net.DialTimeout("tcp", cfg.grpcAddr, time.Second)
		if dialErr == nil {
			conn.Close()
		}
		if telErr == nil && dialErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the collector did not become ready: %w", errors.Join(telErr, dialErr))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop asks the collector to shut down, and kills it if it has not within
// 15 s (a measurement is over by then; its shutdown is not measured).
func (c *collector) stop() {
	if c.front != nil {
		c.front.stop()
	}
	if c.ended() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// tail is the last n lines of the collector's output, for error messages.
func (c *collector) tail(n int) string {
	raw, err := os.ReadFile(c.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
