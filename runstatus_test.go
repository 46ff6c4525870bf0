package primeexporter

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/internal/testkit/freeport"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/primestatusextension"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// runStart is prime_otel's init() record: an event name and nothing else.
func runStart(lr plog.LogRecord) { lr.SetEventName("prime.run.start") }

// runStartAttr is the same event named by the event.name attribute, as
// SDKs without the event_name field send it.
func runStartAttr(lr plog.LogRecord) { lr.Attributes().PutStr("event.name", "prime.run.start") }

func trainKey(key string) primestatusextension.Query {
	return primestatusextension.Query{Kind: primestatusextension.KindTrain, Key: key}
}

// status asks the exporter as the extension would.
func (h *harness) status(q primestatusextension.Query) primestatusextension.Status {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return h.exp.runStatus().RunStatus(ctx, q)
}

func TestAStartRecordCreatesTheRunAndIsNotCountedAsIgnored(t *testing.T) {
	for _, tc := range []struct {
		name  string
		res   map[string]string
		start func(plog.LogRecord)
	}{
		{"a training run, event_name", trainRun("start-1"), runStart},
		{"a training run, event.name attribute", trainRun("start-2"), runStartAttr},
		{"an evaluation", evalRun("start-3"), runStart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			require.NoError(t, h.exp.pushLogs(context.Background(), events(tc.res, tc.start)))
			assert.Len(t, append(h.platform.Runs(), make([]rfttest.Run, len(h.platform.Evaluations()))...), 1, "one run or evaluation created")
			assert.Zero(t, h.count(metricSkipped, map[string]string{"reason": "not_an_event"}))
			assert.Zero(t, h.count(metricRejected, nil))
			assert.NotContains(t, h.logText(), "unknown prime.* event")
		})
	}
}

func TestTheStatusOfARunTellsItsStateIDAndDashboard(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		edit func(*Config)
		opts rfttest.Options
		// play sends the trainer's records; it returns the query.
		play func(t *testing.T, h *harness) primestatusextension.Query
		want func(h *harness) primestatusextension.Status
	}{
		{
			name: "a created run is running, by key",
			play: func(t *testing.T, h *harness) primestatusextension.Query {
				require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("created"), runStart)))
				return trainKey("created")
			},
			want: func(h *harness) primestatusextension.Status {
				id := h.onlyRun().ID
				return primestatusextension.Status{State: "running", ID: id, URL: "https://app.primeintellect.ai/dashboard/training/" + id}
			},
		},
		{
			name: "a created run is found by its platform id too",
			play: func(t *testing.T, h *harness) primestatusextension.Query {
				require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("by-id"), runStart)))
				return primestatusextension.Query{Kind: "train", ID: h.onlyRun().ID}
			},
			want: func(h *harness) primestatusextension.Status {
				id := h.onlyRun().ID
				return primestatusextension.Status{State: "running", ID: id, URL: "https://app.primeintellect.ai/dashboard/training/" + id}
			},
		},
		{
			name: "an attached run is running under its own id, with the configured frontend",
			edit: func(c *Config) { c.FrontendURL = "https://frontend.test" },
			play: func(t *testing.T, h *harness) primestatusextension.Query {
				h.platform.AddRun("hosted-7")
				require.NoError(t, h.exp.pushLogs(ctx, events(map[string]string{"prime.run.id": "hosted-7"}, runStart)))
				return primestatusextension.Query{Kind: "train", ID: "hosted-7"}
			},
			want: func(*harness) primestatusextension.Status {
				return primestatusextension.Status{State: "running", ID: "hosted-7", URL: "https://frontend.test/dashboard/training/hosted-7"}
			},
		},
		{
			name: "an evaluation is running, with its dashboard",
			play: func(t *testing.T, h *harness) primestatusextension.Query {
				require.NoError(t, h.exp.pushLogs(ctx, events(evalRun("ev"), runStart)))
				return primestatusextension.Query{Kind: "eval", Key: "ev"}
			},
			want: func(h *harness) primestatusextension.Status {
				id := h.onlyEvaluation().ID
				return primestatusextension.Status{State: "running", ID: id, URL: rft.Evaluation{ID: id}.DashboardURL("https://app.primeintellect.ai")}
			},
		},
		{
			name: "an evaluation is not the training run of the same key",
			play: func(t *testing.T, h *harness) primestatusextension.Query {
				require.NoError(t, h.exp.pushLogs(ctx, events(evalRun("ev"), runStart)))
				return trainKey("ev")
			},
			want: func(*harness) primestatusextension.Status { return primestatusextension.Status{State: "unknown"} },
		},
		{
			name: "a run nobody sent is unknown",
			play: func(t *testing.T, h *harness) primestatusextension.Query {
				require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("other"), runStart)))
				return trainKey("never-sent")
			},
			want: func(*harness) primestatusextension.Status { return primestatusextension.Status{State: "unknown"} },
		},
		{
			name: "a run whose create the platform has not answered is pending",
			play: func(t *testing.T, h *harness) primestatusextension.Query {
				h.platform.SetOutage(&rfttest.Fault{Status: 503})
				require.Error(t, h.exp.pushLogs(ctx, events(trainRun("down"), runStart)))
				return trainKey("down")
			},
			want: func(*harness) primestatusextension.Status { return primestatusextension.Status{State: "pending"} },
		},
		{
			name: "a run whose end was received is closing during finalize_grace",
			edit: func(c *Config) { c.FinalizeGrace = time.Minute },
			play: func(t *testing.T, h *harness) primestatusextension.Query {
				require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("ending"), runStart, runEnd("completed", ""))))
				return trainKey("ending")
			},
			want: func(h *harness) primestatusextension.Status {
				id := h.onlyRun().ID
				return primestatusextension.Status{State: "closing", ID: id, URL: "https://app.primeintellect.ai/dashboard/training/" + id}
			},
		},
		{
			name: "a closed run says how it ended",
			play: func(t *testing.T, h *harness) primestatusextension.Query {
				require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("done"), runStart, runEnd("failed", "OOM"))))
				h.waitStatus(h.onlyRun().ID, rfttest.StatusFailed)
				require.Eventually(t, func() bool { return h.status(trainKey("done")).State == "closed" }, 5*time.Second, 5*time.Millisecond)
				return trainKey("done")
			},
			want: func(h *harness) primestatusextension.Status {
				id := h.onlyRun().ID
				return primestatusextension.Status{State: "closed", ID: id, URL: "https://app.primeintellect.ai/dashboard/training/" + id, Status: "failed"}
			},
		},
		{
			name: "no team: refused, no_team",
			edit: func(c *Config) { c.TeamID = "" },
			play: func(t *testing.T, h *harness) primestatusextension.Query {
				require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("teamless"), runStart)))
				return trainKey("teamless")
			},
			want: func(*harness) primestatusextension.Status {
				return primestatusextension.Status{State: "refused", Reason: "no_team"}
			},
		},
		{
			name: "a team the platform does not allow: refused, forbidden, with the platform's message",
			opts: rfttest.Options{AllowedTeams: []string{"another-team"}},
			play: func(t *testing.T, h *harness) primestatusextension.Query {
				require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("not-allowed"), runStart)))
				return trainKey("not-allowed")
			},
			want: func(*harness) primestatusextension.Status {
				return primestatusextension.Status{State: "refused", Reason: "forbidden"}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.APIKey = testAPIKey
			srv := rfttest.NewServer(tc.opts)
			t.Cleanup(srv.Close)
			cfg := harnessConfig(srv)
			if tc.edit != nil {
				tc.edit(cfg)
			}
			h := newHarnessWithHost(t, srv, cfg, componenttest.NewNopHost())
			q := tc.play(t, h)
			got := h.status(q)
			want := tc.want(h)
			if want.State == "refused" {
				assert.NotEmpty(t, got.Error, "a refusal says why")
				got.Error = ""
			}
			assert.Equal(t, want, got)
		})
	}
}

// harnessConfig is newHarness's config against srv.
func harnessConfig(srv *rfttest.Server) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL() + "/rft"
	cfg.APIKey = configopaque.String(testAPIKey)
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	cfg.FinalizeTimeout = 5 * time.Second
	return cfg
}

func TestARefusalCarriesThePlatformsMessageAndNeverTheKey(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		opts    rfttest.Options
		reason  string
		message string
	}{
		{"a refused API key", rfttest.Options{APIKey: "the-platform-wants-another-key"}, "unauthorized", "Invalid or missing API key"},
		{"a team not allow-listed", rfttest.Options{APIKey: testAPIKey, AllowedTeams: []string{}}, "forbidden", "External training runs are not enabled for this team"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := rfttest.NewServer(tc.opts)
			t.Cleanup(srv.Close)
			h := newHarnessWithHost(t, srv, harnessConfig(srv), componenttest.NewNopHost())
			require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("refused"), runStart)))
			st := h.status(trainKey("refused"))
			assert.Equal(t, "refused", st.State)
			assert.Equal(t, tc.reason, st.Reason)
			assert.Contains(t, st.Error, tc.message)
			body, err := json.Marshal(st)
			require.NoError(t, err)
			assert.NotContains(t, string(body), testAPIKey)
		})
	}
}

func TestARefusedKeyRefusesEveryRunNotClosedBefore(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: "another-key"})
	t.Cleanup(srv.Close)
	h := newHarnessWithHost(t, srv, harnessConfig(srv), componenttest.NewNopHost())
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("first"), runStart)))
	// A run whose data came after the key was refused never reached the
	// registry: it is refused all the same, as its data is.
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("second"), runStart)))
	for _, key := range []string{"first", "second", "never-sent"} {
		st := h.status(trainKey(key))
		assert.Equal(t, "refused", st.State, key)
		assert.Equal(t, "unauthorized", st.Reason, key)
	}
}

func TestAnOfflineRunsURLIsItsDirectory(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) {
		c.Mode = ModeOffline
		c.Directory = dir
		c.APIKey = ""
	})
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("offline"), runStart)))
	st := h.status(trainKey("offline"))
	require.Equal(t, "running", st.State)
	require.NotEmpty(t, st.ID)
	want := filepath.Join(dir, st.ID)
	assert.Equal(t, want, st.Directory)
	assert.Equal(t, want, st.URL)
	assert.DirExists(t, want)
}

func TestAnOfflineDirectoryIsGivenAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	h := newHarness(t, func(c *Config) {
		c.Mode = ModeOffline
		c.Directory = "relative-runs"
		c.APIKey = ""
	})
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("offline"), runStart)))
	st := h.status(trainKey("offline"))
	assert.True(t, filepath.IsAbs(st.Directory), st.Directory)
	assert.DirExists(t, st.Directory)
}

func TestADisabledExporterSaysSoForEveryRun(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Mode = ModeDisabled })
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("dropped"), runStart)))
	for _, q := range []primestatusextension.Query{trainKey("dropped"), {Kind: "eval", ID: "x"}} {
		assert.Equal(t, primestatusextension.Status{State: "disabled"}, h.status(q))
	}
}

func TestEveryCollectorOfAFleetAnswersForARunAnotherCreated(t *testing.T) {
	f := newFleet(t)
	a, b := f.collector(), f.collector()
	require.NoError(t, a.exp.pushLogs(context.Background(), events(trainRun("fleet-run"), runStart)))
	id := a.onlyRun().ID
	want := primestatusextension.Status{State: "running", ID: id, URL: "https://app.primeintellect.ai/dashboard/training/" + id}
	assert.Equal(t, want, b.status(trainKey("fleet-run")), "by key")
	assert.Equal(t, primestatusextension.Status{State: "unknown"}, b.status(trainKey("not-in-the-fleet")))

	// Closed by the first collector: the second says so.
	require.NoError(t, a.exp.pushLogs(context.Background(), events(trainRun("fleet-run"), runEnd("completed", ""))))
	a.waitStatus(id, rfttest.StatusCompleted)
	require.Eventually(t, func() bool { return b.status(trainKey("fleet-run")).State == "closed" }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "completed", b.status(trainKey("fleet-run")).Status)
	assert.Equal(t, 1, f.creates(), "asking created nothing")
}

// extensionHost is a host whose extensions are exts.
type extensionHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h extensionHost) GetExtensions() map[component.ID]component.Component { return h.exts }

func TestTheExporterAnswersTheStatusRouteUntilItShutsDown(t *testing.T) {
	addr := freeport.Addr(t)
	f := primestatusextension.NewFactory()
	cfg := f.CreateDefaultConfig().(*primestatusextension.Config)
	cfg.NetAddr.Endpoint = addr
	ext, err := f.Create(context.Background(), extensiontest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	host := extensionHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{
		component.MustNewID("prime_status"): ext,
		component.MustNewID("other"):        extension.Extension(nil),
	}}

	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	h := newHarnessWithHost(t, srv, harnessConfig(srv), host)
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("routed"), runStart)))

	ask := func() primestatusextension.Status {
		resp, err := http.Get("http://" + addr + primestatusextension.Path + "?kind=train&key=routed")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var st primestatusextension.Status
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
		return st
	}
	id := h.onlyRun().ID
	assert.Equal(t, primestatusextension.Status{State: "running", Kind: "train", ID: id, URL: "https://app.primeintellect.ai/dashboard/training/" + id}, ask())

	h.shutdown()
	assert.Equal(t, primestatusextension.Status{State: "unknown", Kind: "train"}, ask(), "an exporter shut down is no longer asked")
	http.DefaultClient.CloseIdleConnections()
}
