package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/internal/testkit/freeport"
)

// binaries returns the built collector and demo trainer, failing the test
// when they were not built: these tests never skip.
func binaries(t *testing.T) (otelcol, trainer string) {
	t.Helper()
	otelcol, trainer = os.Getenv("PRIME_OTELCOL"), os.Getenv("PRIME_DEMOTRAINER")
	if otelcol == "" || trainer == "" {
		t.Fatal("PRIME_OTELCOL and PRIME_DEMOTRAINER must name the built binaries: run bash scripts/test.sh")
	}
	return otelcol, trainer
}

// repoRoot is the repository's root, seen from this package's directory.
const repoRoot = ".."

// freeAddr is a loopback port for one of the collector's servers, from
// below the ephemeral range so that no client connection takes it before
// the collector binds it (freeport says why).
func freeAddr(t *testing.T) string {
	t.Helper()
	return freeport.Addr(t)
}

// syncBuffer collects a process's output for assertions.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// collector is a running collector process.
type collector struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
	addr string
	// health is the health check's host:port, when the config has one.
	health string
}

// startCollector writes config to a file and runs the collector on it with
// env added to the environment, waiting until its OTLP/HTTP port answers.
// A config with a health check on ${env:PRIME_HEALTH_ENDPOINT} or a status
// route on ${env:PRIME_STATUS_ENDPOINT} (the shipped ones) gets a free port
// for each unless env names one: tests run many collectors at once, and
// 13133 and 4320 would be taken.
func startCollector(t *testing.T, otelcol, config string, env ...string) *collector {
	t.Helper()
	return startCollectorWith(t, otelcol, config, nil, env...)
}

// startCollectorWith is startCollector with overlays: config files given
// after config, as a user adds --config files; a relative path is the
// repository's (a shipped overlay), an absolute one a test's own.
func startCollectorWith(t *testing.T, otelcol, config string, overlays []string, env ...string) *collector {
	t.Helper()
	path := filepath.Join(t.TempDir(), "collector.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, health := "", ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PRIME_OTLP_HTTP="); ok {
			addr = v
		}
		if v, ok := strings.CutPrefix(kv, "PRIME_HEALTH_ENDPOINT="); ok {
			health = v
		}
	}
	if health == "" && strings.Contains(config, "${env:PRIME_HEALTH_ENDPOINT") {
		health = freeAddr(t)
		env = append(env, "PRIME_HEALTH_ENDPOINT="+health)
	}
	if strings.Contains(config, "${env:PRIME_STATUS_ENDPOINT") && !slices.ContainsFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "PRIME_STATUS_ENDPOINT=")
	}) {
		env = append(env, "PRIME_STATUS_ENDPOINT="+freeAddr(t))
	}
	c := &collector{t: t, out: &syncBuffer{}, done: make(chan error, 1), addr: addr, health: health}
	args := []string{"--config", path}
	for _, o := range overlays {
		if !filepath.IsAbs(o) {
			o = filepath.Join(repoRoot, o)
		}
		args = append(args, "--config", o)
	}
	c.cmd = exec.Command(otelcol, args...)
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			conn.Close()
			return c
		}
		select {
		case err := <-c.done:
			t.Fatalf("collector exited before it listened: %v\n%s", err, c.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector did not listen on %s in 30s:\n%s", addr, c.out.String())
		}
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (c *collector) stop() {
	c.t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Fatalf("collector exited with %v:\n%s", err, c.out.String())
		}
	case <-time.After(30 * time.Second):
		c.t.Fatalf("collector did not stop in 30s:\n%s", c.out.String())
	}
}

// runTrainer plays a demo run against the collector.
func runTrainer(t *testing.T, trainer, addr string, args ...string) string {
	t.Helper()
	out, err := runTrainerErr(trainer, addr, args...)
	if err != nil {
		t.Fatalf("demo trainer failed: %v\n%s", err, out)
	}
	return out
}

// runTrainerErr is runTrainer for a goroutine of its own: it returns the
// failure rather than failing the test.
func runTrainerErr(trainer, addr string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, trainer, append([]string{"-endpoint", addr}, args...)...).CombinedOutput()
	return string(out), err
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool, dump func() string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within 60s\n%s", what, dump())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func fatalf(t *testing.T, c *collector, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s\ncollector output:\n%s", fmt.Sprintf(format, args...), c.out.String())
}

// envInt is the whole number in the environment variable name, or def
// when it is unset: the sizes of the tests run by hand (soak, scale,
// flood).
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}
