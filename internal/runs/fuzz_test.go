package runs

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/testkit/fuzzbytes"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// testAPIKey is the fake platform's key.
const testAPIKey = "sk-test-runs"

// resourceKeys are the names a resource can say something about its run
// with, and prime.run.end's, which ParseEnd reads.
func resourceKeys() []string {
	return []string{
		AttrRunID, AttrRunKey, AttrServiceInstance, AttrRunKind,
		attrRunName, attrRunModel, attrRunEnvironments, AttrRunTeamID, attrRunConfig,
		attrMaxSteps, attrBatchSize, attrRolloutsPerExample, attrSeqLen,
		attrWandbProject, attrWandbEntity, attrWandbRunName,
		attrRunStatus, attrRunError,
	}
}

// Config bits of the first fuzz byte: which run defaults the exporter has.
const (
	fzCfgRunID = 1 << iota
	fzCfgRunKey
	fzCfgModel
	fzCfgEnvironments
	fzCfgRunConfig
	fzCfgSizes
)

func fuzzDefaults(bits byte) Defaults {
	var rc Defaults
	if bits&fzCfgRunID != 0 {
		rc.ID = "cfg-run"
	} else if bits&fzCfgRunKey != 0 {
		rc.Key = "cfg-key" // exclusive with run.id (Validate)
	}
	if bits&fzCfgModel != 0 {
		rc.Model = "cfg/model"
	}
	if bits&fzCfgEnvironments != 0 {
		rc.Environments = []string{"owner/env", "env-1@v2"}
	}
	if bits&fzCfgRunConfig != 0 {
		rc.Config = map[string]any{"trainer": map[string]any{"lr": 1e-6}}
	}
	if bits&fzCfgSizes != 0 {
		rc.MaxSteps, rc.BatchSize, rc.SeqLen = 100, 64, 4096
	}
	return rc
}

func resourceSeed(cfgBits byte, attrs fuzzbytes.MapOf) []byte {
	e := (&fuzzbytes.Encoder{}).Byte(cfgBits)
	return e.Attrs(resourceKeys(), attrs).B
}

// FuzzResourceToRun feeds arbitrary resource attributes through the
// resource → run mapping: resolveIdentity, buildCreateRequest and ParseEnd
// (the same attributes as a prime.run.end record's). None may panic; every
// rejection is an error naming an attribute the resource carries (or the
// model it lacks); and every create body that is accepted marshals to JSON
// the fake platform's strict create route takes with a 201.
func FuzzResourceToRun(f *testing.F) {
	for _, seed := range [][]byte{
		resourceSeed(0, fuzzbytes.MapOf{{AttrRunKey, "k"}, {attrRunModel, "Qwen/Qwen3-8B"}}),
		resourceSeed(fzCfgModel|fzCfgEnvironments|fzCfgRunConfig|fzCfgSizes, fuzzbytes.MapOf{{AttrServiceInstance, "i-1"}}),
		resourceSeed(fzCfgRunID, fuzzbytes.MapOf{{AttrRunKey, "k"}, {attrRunStatus, "failed"}, {attrRunError, "OOM"}}),
		resourceSeed(0, fuzzbytes.MapOf{{AttrRunID, "run-1"}, {AttrRunKind, "eval"}}),
		resourceSeed(fzCfgRunKey, fuzzbytes.MapOf{
			{attrRunModel, "m"}, {attrRunName, "n"}, {AttrRunTeamID, "t"},
			{attrRunEnvironments, []any{"a/b", "c@v1", "@x", "y@"}},
			{attrRunConfig, fuzzbytes.MapOf{{"lr", 1e-6}, {"nested", fuzzbytes.MapOf{{"k", []any{1, "two", true}}}}}},
			{attrMaxSteps, 100}, {attrBatchSize, 64.0}, {attrRolloutsPerExample, 8}, {attrSeqLen, 4096},
			{attrWandbProject, "p"}, {attrWandbEntity, "e"},
		}),
		resourceSeed(0, fuzzbytes.MapOf{{AttrRunKey, "k"}, {attrRunModel, "m"}, {attrRunEnvironments, " a , ,b@v "}, {attrRunConfig, `{"a":[1,{"b":null}]}`}}),
		resourceSeed(0, fuzzbytes.MapOf{{AttrRunKey, "k"}, {attrRunModel, "m"}, {attrRunConfig, "null"}, {attrMaxSteps, -1}, {attrSeqLen, 2.5}}),
		resourceSeed(0, fuzzbytes.MapOf{{AttrRunKey, "k"}, {attrRunModel, "m"}, {attrRunConfig, fuzzbytes.MapOf{{"x", math.NaN()}}}}),
		resourceSeed(0, fuzzbytes.MapOf{{AttrRunKey, 7}, {attrRunModel, []any{"m"}}, {attrRunEnvironments, []any{"a", 1}}, {attrRunStatus, true}}),
		resourceSeed(0, fuzzbytes.MapOf{{AttrRunID, []byte("run")}, {AttrServiceInstance, ""}}),
		resourceSeed(0, fuzzbytes.MapOf{{AttrRunKey, "\xff\xfe"}, {attrRunModel, "m\x00"}, {attrRunEnvironments, []any{" "}}, {attrRunStatus, "done"}}),
		resourceSeed(0, fuzzbytes.MapOf{{AttrServiceInstance, "i"}, {attrMaxSteps, math.Inf(1)}, {attrBatchSize, 1e300}, {attrRunError, fuzzbytes.MapOf{{"e", 1}}}}),
	} {
		f.Add(seed)
	}
	platform := newCreateChecker(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzbytes.Reader{B: data}
		d := fuzzDefaults(r.Byte())
		res := pcommon.NewResource()
		r.Attrs(res.Attributes(), resourceKeys(), 0)

		checkIdentity(t, res, d)
		if kind := runKind(res); kind == "" {
			t.Fatal("runKind is empty")
		}
		checkCreateRequest(t, res, d, platform)
		checkEnd(t, res.Attributes())
	})
}

func checkIdentity(t *testing.T, res pcommon.Resource, d Defaults) {
	t.Helper()
	id, err := resolveIdentity(res, d, "")
	if err != nil {
		checkNamesAnAttribute(t, err, res.Attributes(), AttrRunID, AttrRunKey, AttrServiceInstance)
		return
	}
	if id.value == "" || id.key() == "" || id.String() == "" {
		t.Fatalf("identity %#v is empty", id)
	}
	wantAttach := id.source == AttrRunID || id.source == "run.id"
	if id.attach != wantAttach || !slices.Contains([]string{AttrRunID, "run.id", AttrRunKey, "run.key", AttrServiceInstance}, id.source) {
		t.Fatalf("identity %#v: source and attach disagree", id)
	}
	if v, ok := res.Attributes().Get(AttrRunID); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" && id.source != AttrRunID {
		t.Fatalf("a resource with %s=%q resolved to %v", AttrRunID, v.Str(), id)
	}
}

func checkCreateRequest(t *testing.T, res pcommon.Resource, d Defaults, platform *createChecker) {
	t.Helper()
	req, err := buildCreateRequest(res, d, "team-1")
	if err != nil {
		var leaves []error
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			leaves = j.Unwrap()
		} else {
			leaves = []error{err}
		}
		for _, leaf := range leaves {
			if !strings.Contains(leaf.Error(), attrRunModel) {
				checkNamesAnAttribute(t, leaf, res.Attributes())
			}
		}
		return
	}
	if req.BaseModel == "" || req.Environments == nil {
		t.Fatalf("accepted a create body without a model or with null environments: %+v", req)
	}
	if v, ok := res.Attributes().Get(attrRunModel); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" && req.BaseModel != v.Str() {
		t.Fatalf("base_model %q, but the resource says %q", req.BaseModel, v.Str())
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("the create body does not marshal: %v (%+v)", err, req)
	}
	if status, answer := platform.create(body); status != http.StatusCreated {
		t.Fatalf("the fake platform refused the create body %s: %d %s", body, status, answer)
	}
}

func checkEnd(t *testing.T, attrs pcommon.Map) {
	t.Helper()
	end, err := ParseEnd(attrs)
	if !slices.Contains([]string{StatusCompleted, StatusFailed, StatusCancelled, StatusCrashed}, end.Status) {
		t.Fatalf("ParseEnd gave status %q", end.Status)
	}
	if err != nil {
		if end.Status != StatusFailed {
			t.Fatalf("a bad prime.run.end closes the run as %q, not failed", end.Status)
		}
		checkNamesAnAttribute(t, err, attrs, attrRunStatus)
	}
	if msg := end.statusMessage(); (end.Status == StatusCompleted) != (msg == "") {
		t.Fatalf("status %q with message %q", end.Status, msg)
	}
}

// checkNamesAnAttribute: the error is clean (no fmt artefacts) and names
// one of names, or when names is empty one of the attributes present.
func checkNamesAnAttribute(t *testing.T, err error, attrs pcommon.Map, names ...string) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "%!") {
		t.Fatalf("error %q has a formatting artefact", msg)
	}
	if len(names) == 0 {
		for k := range attrs.All() {
			names = append(names, k)
		}
	}
	for _, n := range names {
		if n != "" && strings.Contains(msg, n) {
			return
		}
	}
	t.Fatalf("error %q names none of %q", msg, names)
}

// createChecker posts create bodies to the fake platform's handler in
// process (no socket), starting a fresh fake now and then so that its
// request log does not grow for the whole fuzz run.
type createChecker struct {
	tb   testing.TB
	srv  *rfttest.Server
	path string
	n    int
}

func newCreateChecker(tb testing.TB) *createChecker {
	c := &createChecker{tb: tb}
	tb.Cleanup(func() {
		if c.srv != nil {
			c.srv.Close()
		}
	})
	return c
}

func (c *createChecker) create(body []byte) (int, string) {
	if c.srv == nil || c.n%1000 == 0 {
		if c.srv != nil {
			c.srv.Close()
		}
		c.srv = rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
		u, err := url.Parse(c.srv.BaseURL())
		if err != nil {
			c.tb.Fatal(err)
		}
		c.path = u.Path + "/rft/external-runs"
	}
	c.n++
	req := httptest.NewRequest(http.MethodPost, c.path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testAPIKey)
	req.Header.Set("X-Api-Key", testAPIKey)
	w := httptest.NewRecorder()
	c.srv.Handler().ServeHTTP(w, req)
	return w.Code, w.Body.String()
}
