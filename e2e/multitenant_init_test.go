package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// prime_otel's init() behind the multi-tenant gateway (deploy/multitenant/
// gateway.yaml as shipped, its max_open_runs lowered to 1), with Debian's
// python3 and the package from the tree: it fails fast on each refusal the
// trainer can be told of, and returns the run's id and url otherwise; the
// status route answers each caller about its own tenant's runs only.
// init()'s check (the start event, then the status route) is the real one
// over HTTPS; the OTel SDK pipeline it opens after the check is the python
// tests' recording fake (python/tests/fakes.py), as Debian has no SDK.
func TestPrimeOtelInitBehindTheMultitenantGatewayFailsFastOrReturnsItsRunAndTellsNoOtherTenantsRun(t *testing.T) {
	otelcol, _ := binaries(t)
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s is needed (apt-get install python3): %v", python, err)
	}
	pkg, err := filepath.Abs(filepath.Join("..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	platform := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{
		{Key: mtAliceKey, ID: "alice", Teams: []string{"team-alice"}},
		{Key: mtBobKey, ID: "bob", Teams: []string{"team-bob"}},
	}})
	defer platform.Close()
	g := startMultitenantGatewayEdited(t, otelcol, platform, func(config string) string {
		if !strings.Contains(config, "max_open_runs: 32") {
			t.Fatal("the shipped config no longer says max_open_runs: 32")
		}
		return strings.Replace(config, "max_open_runs: 32", "max_open_runs: 1", 1)
	})

	type outcome struct {
		out  string
		err  error
		took time.Duration
	}
	initAs := func(key, team, runKey string) outcome {
		script := filepath.Join(t.TempDir(), "init.py")
		if err := os.WriteFile(script, []byte(`import os
import prime_otel as pr
from tests.fakes import patched
with patched(dict(os.environ), ask_collector=True):
    run = pr.init(kind="train", model="m", environments=["gsm8k"])
    print("init() returned", run.id, run.url)
`), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, python, script)
		cmd.Env = []string{
			"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PYTHONPATH=" + filepath.Join(pkg, "src") + ":" + pkg, "PYTHONDONTWRITEBYTECODE=1",
			"OTEL_EXPORTER_OTLP_ENDPOINT=https://" + g.httpAddr, "OTEL_EXPORTER_OTLP_CERTIFICATE=" + g.caFile,
			"PRIME_STATUS_ENDPOINT=https://" + g.statusAddr,
			"PRIME_API_KEY=" + key, "PRIME_TEAM_ID=" + team, "PRIME_RUN_KEY=" + runKey,
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		if ctx.Err() != nil {
			fatalf(t, g.c, "init() did not return within 60 s:\n%s", out.String())
		}
		return outcome{out.String(), err, time.Since(start)}
	}
	raises := func(what string, o outcome, exception, text string) {
		t.Helper()
		if o.err == nil || !strings.Contains(o.out, exception) || !strings.Contains(o.out, text) {
			fatalf(t, g.c, "%s: init() should raise %s (%q), got %v:\n%s", what, exception, text, o.err, o.out)
		}
		if o.took > 20*time.Second {
			fatalf(t, g.c, "%s: init() took %s to raise, want within 20 s", what, o.took)
		}
		if strings.Contains(o.out, mtAliceKey) || strings.Contains(o.out, mtBobKey) || strings.Contains(o.out, mtWrongKey) {
			fatalf(t, g.c, "%s: the trainer's output carries a key:\n%s", what, o.out)
		}
		t.Logf("%s: init() raised %s in %s", what, exception, o.took.Round(10*time.Millisecond))
	}

	// Alice's run: init() returns its id and dashboard.
	ok := initAs(mtAliceKey, "team-alice", "alice-1")
	if ok.err != nil || !strings.Contains(ok.out, "init() returned") {
		fatalf(t, g.c, "alice's init() should return: %v\n%s", ok.err, ok.out)
	}
	runs := runsOwnedBy(platform, "alice")
	if len(runs) != 1 || !strings.Contains(ok.out, runs[0].ID) || !strings.Contains(ok.out, "/dashboard/training/"+runs[0].ID) {
		fatalf(t, g.c, "alice's init() should print her run's id and url (%+v):\n%s", runs, ok.out)
	}

	// The route tells bob nothing of alice's run, and alice all of it.
	if st := askStatus(t, g, mtBobKey, "alice-1"); st["state"] != "unknown" || st["id"] != nil {
		fatalf(t, g.c, "bob asking about alice's run key should find an unknown run, got %v", st)
	}
	if st := askStatus(t, g, mtAliceKey, "alice-1"); st["state"] != "running" || st["id"] != runs[0].ID {
		fatalf(t, g.c, "alice asking about her run should find it running as %s, got %v", runs[0].ID, st)
	}

	raises("a key the platform refuses", initAs(mtWrongKey, "team-alice", "wrong-1"), "UnauthorizedError", "401")
	raises("a team the platform refuses the user", initAs(mtBobKey, "team-alice", "bob-1"), "ForbiddenError", "403 Forbidden")
	raises("a tenant at its run limit", initAs(mtAliceKey, "team-alice", "alice-2"), "APIError", "max_open_runs (1)")
}

// askStatus asks the gateway's run status route about runKey with key.
func askStatus(t *testing.T, g *mtGateway, key, runKey string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://"+g.statusAddr+"/prime/v1/runs/status?"+url.Values{"kind": {"train"}, "key": {runKey}}.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := g.client(false).Do(req)
	if err != nil {
		fatalf(t, g.c, "asking the status route: %v", err)
	}
	defer resp.Body.Close()
	var st map[string]any
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		fatalf(t, g.c, "the status route answered %d", resp.StatusCode)
	}
	return st
}
