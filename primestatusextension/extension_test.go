package primestatusextension

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/internal/testkit/freeport"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/primeintellect/primeexporter/primestatusextension/internal/metadata"
)

// fakeSource answers from a map keyed by the query's key or id, and
// unknown for anything else.
type fakeSource map[string]Status

func (f fakeSource) RunStatus(_ context.Context, q Query) Status {
	if st, ok := f[q.Kind+"/"+q.Key+q.ID]; ok {
		return st
	}
	return Status{State: StateUnknown}
}

// get asks h for path and decodes the answer.
func get(t *testing.T, h http.Handler, path string) (int, Status, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	return getURL(t, srv.URL+path)
}

func getURL(t *testing.T, url string) (int, Status, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var st Status
	require.NoError(t, json.Unmarshal(body, &st), "body %s", body)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	return resp.StatusCode, st, string(body)
}

func newTestExtension(cfg *Config) *statusExtension {
	return newStatusExtension(cfg, componenttest.NewNopTelemetrySettings())
}

func TestABadQueryIsA400NamingTheParameter(t *testing.T) {
	x := newTestExtension(createDefaultConfig().(*Config))
	for _, tc := range []struct {
		name, query, names string
	}{
		{"no key and no id", "", "key or id"},
		{"only a kind", "?kind=train", "key or id"},
		{"both key and id", "?key=a&id=b", "key and id"},
		{"an unknown kind", "?kind=rl&key=a", "kind"},
		{"an empty key", "?key=", "key"},
		{"an empty id", "?id=", "id"},
		{"a key given twice", "?key=a&key=b", "key"},
		{"an unknown parameter", "?run_key=a", `"run_key"`},
		{"a query that does not parse", "?key=%zz", "invalid URL escape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, st, body := get(t, x.handler(), Path+tc.query)
			assert.Equal(t, http.StatusBadRequest, code)
			assert.Contains(t, st.Error, tc.names, body)
			assert.Empty(t, st.State, "a 400 has no state")
		})
	}
}

func TestTheRouteAnswersOnlyGETOnItsPath(t *testing.T) {
	x := newTestExtension(createDefaultConfig().(*Config))
	srv := httptest.NewServer(x.handler())
	defer srv.Close()

	resp, err := http.Post(srv.URL+Path+"?key=a", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))

	resp, err = http.Get(srv.URL + "/prime/v1/runs?key=a")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestTheFirstSourceThatKnowsTheRunAnswers(t *testing.T) {
	running := Status{State: StateRunning, ID: "run-1", URL: "https://app/dashboard/training/run-1"}
	refused := Status{State: StateRefused, Reason: "no_team", Error: "run has no team"}
	for _, tc := range []struct {
		name    string
		sources []Source
		query   string
		want    Status
	}{
		{"no source: unknown, with the kind asked", nil, "?key=k", Status{State: StateUnknown, Kind: KindTrain}},
		{"a source that knows it", []Source{fakeSource{"train/k": running}}, "?key=k", withKind(running, KindTrain)},
		{"kind defaults to train", []Source{fakeSource{"eval/k": running}}, "?key=k", Status{State: StateUnknown, Kind: KindTrain}},
		{"an evaluation by id", []Source{fakeSource{"eval/run-1": running}}, "?kind=eval&id=run-1", withKind(running, KindEval)},
		{"the first says unknown, the second knows", []Source{fakeSource{}, fakeSource{"train/k": refused}}, "?key=k", withKind(refused, KindTrain)},
		{"both know: the first wins", []Source{fakeSource{"train/k": running}, fakeSource{"train/k": refused}}, "?key=k", withKind(running, KindTrain)},
		{"a disabled exporter answers for every run", []Source{fakeSource{"train/k": {State: StateDisabled}}}, "?key=k", Status{State: StateDisabled, Kind: KindTrain}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newTestExtension(createDefaultConfig().(*Config))
			for _, s := range tc.sources {
				x.RegisterRunStatusSource(s)
			}
			code, st, body := get(t, x.handler(), Path+tc.query)
			assert.Equal(t, http.StatusOK, code, body)
			assert.Equal(t, tc.want, st)
		})
	}
}

func withKind(st Status, kind string) Status {
	st.Kind = kind
	return st
}

func TestAnAnswerLeavesOutEmptyFields(t *testing.T) {
	x := newTestExtension(createDefaultConfig().(*Config))
	x.RegisterRunStatusSource(fakeSource{"train/k": {State: StatePending}})
	_, _, body := get(t, x.handler(), Path+"?key=k")
	assert.JSONEq(t, `{"state":"pending","kind":"train"}`, body)
}

func TestAnUnregisteredSourceIsNoLongerAsked(t *testing.T) {
	x := newTestExtension(createDefaultConfig().(*Config))
	first := x.RegisterRunStatusSource(fakeSource{"train/k": {State: StateRunning, ID: "a"}})
	x.RegisterRunStatusSource(fakeSource{"train/k": {State: StateRunning, ID: "b"}})
	first()
	first() // a second call changes nothing
	_, st, _ := get(t, x.handler(), Path+"?key=k")
	assert.Equal(t, "b", st.ID)
}

// freeAddr reserves a loopback port.
func freeAddr(t *testing.T) string {
	t.Helper()
	return freeport.Addr(t)
}

func TestTheExtensionServesOnItsEndpointUntilShutdown(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = freeAddr(t)
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	ext.(*statusExtension).RegisterRunStatusSource(fakeSource{"train/k": {State: StateRunning, ID: "run-1"}})

	code, st, _ := getURL(t, "http://"+cfg.NetAddr.Endpoint+Path+"?key=k")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "run-1", st.ID)

	require.NoError(t, ext.Shutdown(context.Background()))
	_, err = net.DialTimeout("tcp", cfg.NetAddr.Endpoint, time.Second)
	assert.Error(t, err, "the port still listens after shutdown")
}

func TestATakenPortFailsTheStart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = l.Addr().String()
	x := newTestExtension(cfg)
	assert.Error(t, x.Start(context.Background(), componenttest.NewNopHost()))
	assert.NoError(t, x.Shutdown(context.Background()))
}
