package runs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestIdentityIsResolvedInTheContractOrderFirstMatchWins(t *testing.T) {
	tests := []struct {
		name  string
		attrs map[string]string
		cfg   Defaults
		want  identity
	}{
		{"the resource's run id attaches",
			map[string]string{"prime.run.id": "run-1", "prime.run.key": "k", "service.instance.id": "i"}, Defaults{ID: "cfg-run"},
			identity{source: "prime.run.id", value: "run-1", attach: true}},
		{"the configured run id attaches whatever keys the SDK adds",
			map[string]string{"prime.run.key": "k", "service.instance.id": "i"}, Defaults{ID: "cfg-run"},
			identity{source: "run.id", value: "cfg-run", attach: true}},
		{"the resource's run key creates",
			map[string]string{"prime.run.key": "k", "service.instance.id": "i"}, Defaults{Key: "cfg-key"},
			identity{source: "prime.run.key", value: "k"}},
		{"the configured run key creates",
			map[string]string{"service.instance.id": "i"}, Defaults{Key: "cfg-key"},
			identity{source: "run.key", value: "cfg-key"}},
		{"the service instance is the identity of last resort",
			map[string]string{"service.instance.id": "i"}, Defaults{},
			identity{source: "service.instance.id", value: "i"}},
		{"an empty attribute counts as absent",
			map[string]string{"prime.run.id": "", "prime.run.key": "k"}, Defaults{},
			identity{source: "prime.run.key", value: "k"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := pcommon.NewResource()
			for k, v := range tt.attrs {
				res.Attributes().PutStr(k, v)
			}
			got, err := resolveIdentity(res, tt.cfg, "")
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestAResourceWithNoIdentityIsRefusedNamingEveryAttribute(t *testing.T) {
	res := pcommon.NewResource()
	res.Attributes().PutStr("service.name", "trainer")
	_, err := resolveIdentity(res, Defaults{}, "")
	require.Error(t, err)
	for _, name := range []string{"prime.run.id", "prime.run.key", "service.instance.id", "run.id", "run.key"} {
		assert.Contains(t, err.Error(), name)
	}
}

func TestANonStringIdentityAttributeIsNamedWithItsType(t *testing.T) {
	res := pcommon.NewResource()
	res.Attributes().PutInt("prime.run.key", 7)
	_, err := resolveIdentity(res, Defaults{}, "")
	require.EqualError(t, err, "resource attribute prime.run.key must be a string, got int")
}

func TestKeysFromTheResourceAndTheConfigMeanTheSameRun(t *testing.T) {
	fromAttr := identity{source: AttrRunKey, value: "k"}
	fromConfig := identity{source: "run.key", value: "k"}
	instance := identity{source: AttrServiceInstance, value: "k"}
	attached := identity{source: AttrRunID, value: "k", attach: true}
	assert.Equal(t, fromAttr.key(), fromConfig.key())
	assert.NotEqual(t, fromAttr.key(), instance.key())
	assert.NotEqual(t, fromAttr.key(), attached.key())
}
