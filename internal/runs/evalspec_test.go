package runs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/rft"
)

func evalResource(attrs map[string]any) pcommon.Resource {
	res := pcommon.NewResource()
	_ = res.Attributes().FromRaw(attrs)
	res.Attributes().PutStr(AttrRunKind, KindEval)
	return res
}

func TestAnEvaluationsIdentityIgnoresTheTrainingRunsConfigKeys(t *testing.T) {
	tests := []struct {
		name   string
		attrs  map[string]any
		evalID string
		want   identity
	}{
		{"its resource's key creates it, whatever run.id says",
			map[string]any{"prime.run.key": "k"}, "",
			identity{source: "prime.run.key", value: "k", eval: true}},
		{"eval.id attaches it",
			map[string]any{"prime.run.key": "k"}, "eval-9",
			identity{source: "eval.id", value: "eval-9", attach: true, eval: true}},
		{"its resource's run id attaches it before eval.id",
			map[string]any{"prime.run.id": "eval-1"}, "eval-9",
			identity{source: "prime.run.id", value: "eval-1", attach: true, eval: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveIdentity(evalResource(tt.attrs), Defaults{ID: "train-run", Key: "train-key"}, tt.evalID)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestAnEvaluationAndATrainingRunOfOneKeyAreTwoRuns(t *testing.T) {
	train := identity{source: AttrRunKey, value: "k"}
	eval := identity{source: AttrRunKey, value: "k", eval: true}
	assert.NotEqual(t, train.key(), eval.key())
	assert.Equal(t, eval, savedIdentity(runstore.SavedRun{Key: eval.key(), Source: AttrRunKey, Value: "k"}), "a restart knows an evaluation by its key")
}

func TestTheEvaluationCreateBodyComesFromTheResource(t *testing.T) {
	spec, err := buildEvalSpec(evalResource(map[string]any{
		"prime.run.environments": []any{"primeintellect/gsm8k", "math-python@v2"},
		"prime.run.model":        "Qwen/Qwen3-4B",
		"prime.run.config":       `{"seed": 1}`,
		"prime.eval.tags":        []any{"nightly"},
		"prime.eval.framework":   "verifiers",
	}), "team-cfg")
	require.NoError(t, err)
	assert.Equal(t, []rft.EnvironmentRef{{Owner: "primeintellect", Name: "gsm8k"}, {Name: "math-python", VersionID: "v2"}}, spec.refs)
	assert.Equal(t, "gsm8k", spec.req.Dataset, "the first environment's name")
	assert.Regexp(t, `^gsm8k-[0-9a-f]{8}$`, spec.req.Name)
	assert.Equal(t, "team-cfg", spec.req.TeamID)
	assert.Equal(t, []string{"nightly"}, spec.req.Tags)
	assert.Equal(t, map[string]any{"seed": float64(1)}, spec.req.Metadata)
	assert.Equal(t, "Qwen/Qwen3-4B", spec.req.ModelName)
}

func TestABadEvaluationResourceIsRefusedNamingTheAttribute(t *testing.T) {
	tests := []struct {
		name  string
		attrs map[string]any
		want  string
	}{
		{"no environments", map[string]any{"prime.run.key": "k"}, "set the resource attribute prime.run.environments"},
		{"tags that are not strings", map[string]any{"prime.run.environments": "a", "prime.eval.tags": []any{1}}, "prime.eval.tags[0] must be a string"},
		{"a config that is no object", map[string]any{"prime.run.environments": "a", "prime.run.config": "[1]"}, "prime.run.config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildEvalSpec(evalResource(tt.attrs), "")
			assert.ErrorContains(t, err, tt.want)
		})
	}
}
