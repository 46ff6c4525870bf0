package tenants

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// defaults are a gateway's limits in the overrides' tests.
var defaults = Limit{BytesPerSecond: 15e6, RecordsPerSecond: 10_000, BurstSeconds: 2}

// overridesIn is the overrides of a file of the test holding content, with
// their log lines.
func overridesIn(t *testing.T, content string) (*overrides, string, *observer.ObservedLogs) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "limits.yaml")
	write(t, file, content)
	core, logs := observer.New(zapcore.InfoLevel)
	return newOverrides(file, defaults, zap.New(core)), file, logs
}

func write(t *testing.T, file, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(file, []byte(content), 0o600))
}

func TestAnOverrideReplacesOnlyTheKeysItNamesAndOtherTenantsKeepTheDefaults(t *testing.T) {
	o, _, logs := overridesIn(t, "alice:\n  records_per_second: 50\nbob:\n  bytes_per_second: 0\n  burst_seconds: 0.5\n")
	require.NoError(t, o.load())
	assert.Equal(t, Limit{BytesPerSecond: 15e6, RecordsPerSecond: 50, BurstSeconds: 2}, o.of("alice"))
	assert.Equal(t, Limit{BytesPerSecond: 0, RecordsPerSecond: 10_000, BurstSeconds: 0.5}, o.of("bob"), "0: no bytes limit for bob")
	assert.Equal(t, defaults, o.of("carol"))
	assert.Equal(t, 2, logs.FilterMessage("A tenant's ingest limit changed").Len(), "one line per tenant")
}

func TestAChangedFileTakesEffectAtTheNextReloadWithALinePerTenantItChanges(t *testing.T) {
	o, file, logs := overridesIn(t, "alice:\n  records_per_second: 50\nbob:\n  records_per_second: 5\n")
	require.NoError(t, o.load())
	o.reload()
	assert.Equal(t, 2, logs.FilterMessage("A tenant's ingest limit changed").Len(), "the same content changes nothing")

	write(t, file, "alice:\n  records_per_second: 70\nbob:\n  records_per_second: 5\ncarol:\n  burst_seconds: 10\n")
	o.reload()
	assert.Equal(t, 70.0, o.of("alice").RecordsPerSecond)
	assert.Equal(t, 10.0, o.of("carol").BurstSeconds)
	changed := logs.FilterMessage("A tenant's ingest limit changed").All()[2:]
	require.Len(t, changed, 2, "alice and carol changed; bob did not")
	assert.Equal(t, "alice", changed[0].ContextMap()["tenant"])
	assert.Equal(t, "carol", changed[1].ContextMap()["tenant"])
}

func TestATenantRemovedFromTheFileGoesBackToTheDefaults(t *testing.T) {
	o, file, logs := overridesIn(t, "alice:\n  records_per_second: 50\nbob:\n  records_per_second: 5\n")
	require.NoError(t, o.load())
	write(t, file, "bob:\n  records_per_second: 5\n")
	o.reload()
	assert.Equal(t, defaults, o.of("alice"))
	last := logs.FilterMessage("A tenant's ingest limit changed").All()[2]
	assert.Equal(t, "alice", last.ContextMap()["tenant"])
	assert.Equal(t, "tenants::limits (no override)", last.ContextMap()["from"])

	write(t, file, "")
	o.reload()
	assert.Equal(t, defaults, o.of("bob"), "an empty file overrides no one")
}

func TestABadFileKeepsTheLastGoodOverridesAndIsLoggedOnceNamingTheFileAndTheKey(t *testing.T) {
	o, file, logs := overridesIn(t, "alice:\n  records_per_second: 50\n")
	require.NoError(t, o.load())
	for _, bad := range []struct{ content, names string }{
		{"alice:\n  records_per_sec: 70\n", `alice: unknown key "records_per_sec"`},
		{"alice:\n  records_per_second: -1\n", "alice: records_per_second must be a number of at least 0"},
		{"alice:\n  burst_seconds: 0\n", "alice: burst_seconds must be positive"},
		{"alice:\n  bytes_per_second: 15MB\n", "alice: bytes_per_second must be a number, got 15MB"},
		{"- alice\n", "not a map of user ids to limits"},
	} {
		write(t, file, bad.content)
		o.reload()
		o.reload()
		assert.Equal(t, 50.0, o.of("alice").RecordsPerSecond, "the last good overrides stay")
		var errs []observer.LoggedEntry
		for _, e := range logs.TakeAll() {
			if e.Level == zapcore.ErrorLevel {
				errs = append(errs, e)
			}
		}
		require.Len(t, errs, 1, "one error for a bad content, however often it is read: %s", bad.content)
		msg := errs[0].ContextMap()["error"].(string)
		assert.Contains(t, msg, "tenants::limits::overrides_file "+file+": "+bad.names)
	}
	require.NoError(t, os.Remove(file))
	o.reload()
	o.reload()
	assert.Equal(t, 50.0, o.of("alice").RecordsPerSecond, "a file gone keeps the last good overrides")
	assert.Equal(t, 1, logs.FilterMessage("Cannot read the tenants' limit overrides: the last good ones stay").Len())
}

func TestAFileThatIsBadOrMissingAtStartFailsTheStart(t *testing.T) {
	o, _, _ := overridesIn(t, "alice:\n  records_per_second: -5\n")
	assert.ErrorContains(t, o.load(), "alice: records_per_second must be a number of at least 0")
	missing := newOverrides(filepath.Join(t.TempDir(), "none.yaml"), defaults, zap.NewNop())
	assert.ErrorContains(t, missing.load(), "tenants::limits::overrides_file")
	assert.NoError(t, newOverrides("", defaults, zap.NewNop()).load(), "no file: the defaults for all")
}
