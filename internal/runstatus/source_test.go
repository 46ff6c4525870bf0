package runstatus

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/client"

	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/tenant"
	"github.com/primeintellect/primeexporter/primestatusextension"
)

// registry answers every query with its status, and keeps the last query.
type registry struct {
	status runs.RunStatus
	asked  runs.StatusQuery
}

func (r *registry) Status(_ context.Context, q runs.StatusQuery) runs.RunStatus {
	r.asked = q
	return r.status
}

func serving(r Registry) func(context.Context) Registry {
	return func(context.Context) Registry { return r }
}

func TestARunsAnswerCarriesItsStateAndWhereItCanBeSeen(t *testing.T) {
	reg := &registry{status: runs.RunStatus{State: "closed", ID: "run-1", End: "failed"}}
	online := Source{Registry: serving(reg), Where: Dashboards("https://app.test")}
	got := online.RunStatus(context.Background(), primestatusextension.Query{Kind: "train", Key: "k"})
	assert.Equal(t, primestatusextension.Status{State: "closed", ID: "run-1", Status: "failed", URL: "https://app.test/dashboard/training/run-1"}, got)
	assert.Equal(t, runs.StatusQuery{Key: "k"}, reg.asked)

	online.RunStatus(context.Background(), primestatusextension.Query{Kind: "eval", ID: "ev-1"})
	assert.Equal(t, runs.StatusQuery{Eval: true, ID: "ev-1"}, reg.asked, "an evaluation is asked for as one")
}

func TestAnOfflineRunIsSeenInItsDirectoryGivenAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	reg := &registry{status: runs.RunStatus{State: "running", ID: "off-1"}}
	got := Source{Registry: serving(reg), Where: Directories("relative-runs")}.RunStatus(context.Background(), primestatusextension.Query{Kind: "train", Key: "k"})
	assert.True(t, filepath.IsAbs(got.Directory), got.Directory)
	assert.Equal(t, "off-1", filepath.Base(got.Directory))
	assert.Equal(t, got.Directory, got.URL)
}

func TestARefusedRunWithoutAnIDSaysWhyAndNoPlace(t *testing.T) {
	reg := &registry{status: runs.RunStatus{State: "refused", Reason: "no_team", Message: "no team"}}
	got := Source{Registry: serving(reg), Where: Dashboards("https://app.test")}.RunStatus(context.Background(), primestatusextension.Query{Kind: "train", Key: "k"})
	assert.Equal(t, primestatusextension.Status{State: "refused", Reason: "no_team", Error: "no team"}, got)
}

func TestWithoutARegistryEveryRunIsUnknownAndDisabledSaysSo(t *testing.T) {
	q := primestatusextension.Query{Kind: "train", Key: "k"}
	none := Source{Registry: serving(nil), Where: Dashboards("https://app.test")}
	assert.Equal(t, primestatusextension.Status{State: "unknown"}, none.RunStatus(context.Background(), q))
	disabled := Source{Disabled: true, Registry: serving(&registry{status: runs.RunStatus{State: "running", ID: "x"}})}
	assert.Equal(t, primestatusextension.Status{State: "disabled"}, disabled.RunStatus(context.Background(), q))
}

// userAuth is client.Info.Auth as prime_auth leaves it.
type userAuth string

func (u userAuth) GetAttribute(name string) any {
	if name == tenant.UserIDAttribute {
		return string(u)
	}
	return nil
}

func (userAuth) GetAttributeNames() []string { return []string{tenant.UserIDAttribute} }

func askedBy(user string) context.Context {
	info := client.Info{}
	if user != "" {
		info.Auth = userAuth(user)
	}
	return client.NewContext(context.Background(), info)
}

func TestATenantIsAnsweredFromItsOwnRegistryAndAnotherTenantsRunIsUnknown(t *testing.T) {
	alice := &registry{status: runs.RunStatus{State: "running", ID: "run-a"}}
	byUser := map[string]Registry{"alice": alice}
	src := Source{Registry: ByUser(func(user string) Registry { return byUser[user] }), Where: Dashboards("https://app.test")}
	q := primestatusextension.Query{Kind: "train", Key: "shared-key"}

	assert.Equal(t, "run-a", src.RunStatus(askedBy("alice"), q).ID)
	assert.Equal(t, primestatusextension.Status{State: "unknown"}, src.RunStatus(askedBy("bob"), q), "bob asks about the key alice's run has")
	assert.Equal(t, primestatusextension.Status{State: "unknown"}, src.RunStatus(askedBy(""), q), "a caller the route did not authenticate")
	assert.Equal(t, primestatusextension.Status{State: "unknown"}, src.RunStatus(context.Background(), q))
}
