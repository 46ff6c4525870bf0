package runs

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/rft"
)

func TestTheCreateBodyComesFromTheResourceWithTheConfigAsFallback(t *testing.T) {
	d := Defaults{
		Name: "cfg-name", Model: "cfg-model", Environments: []string{"cfg-env"},
		MaxSteps: 5, BatchSize: 2, Config: map[string]any{"from": "config"},
		Wandb: Wandb{Project: "cfg-project"},
	}
	res := pcommon.NewResource()
	a := res.Attributes()
	a.PutStr("prime.run.model", "Qwen/Qwen3-8B")
	a.PutStr("prime.run.name", "my-run")
	envs := a.PutEmptySlice("prime.run.environments")
	envs.AppendEmpty().SetStr("primeintellect/vf-math")
	envs.AppendEmpty().SetStr("env-123@v7")
	envs.AppendEmpty().SetStr("owner/name@")
	a.PutStr("prime.run.team_id", "team-1")
	a.PutStr("prime.run.config", `{"trainer":{"lr":1e-6}}`)
	a.PutInt("prime.training.max_steps", 100)
	a.PutDouble("prime.training.batch_size", 64) // a whole double is an int
	a.PutInt("prime.training.rollouts_per_example", 8)
	a.PutInt("prime.training.seq_len", 4096)
	a.PutStr("prime.wandb.entity", "e")
	a.PutStr("prime.wandb.run_name", "r")

	got, err := buildCreateRequest(res, d, "cfg-team")
	require.NoError(t, err)
	assert.Equal(t, rft.CreateRunRequest{
		BaseModel: "Qwen/Qwen3-8B", MaxSteps: 100,
		Environments: []rft.Environment{
			{ID: "primeintellect/vf-math"}, {ID: "env-123", VersionID: "v7"}, {ID: "owner/name@"},
		},
		TeamID: "team-1", Name: "my-run", BatchSize: 64, RolloutsPerExample: 8, SeqLen: 4096,
		RunConfig:    map[string]any{"trainer": map[string]any{"lr": 1e-6}},
		WandbProject: "cfg-project", WandbEntity: "e", WandbRunName: "r",
	}, got)
}

func TestTheConfigFillsEveryFieldTheResourceLeavesOut(t *testing.T) {
	d := Defaults{Model: "cfg-model", Environments: []string{"a", "b@3"}, MaxSteps: 5}
	got, err := buildCreateRequest(pcommon.NewResource(), d, "cfg-team")
	require.NoError(t, err)
	assert.Equal(t, rft.CreateRunRequest{
		BaseModel: "cfg-model", MaxSteps: 5, TeamID: "cfg-team",
		Environments: []rft.Environment{{ID: "a"}, {ID: "b", VersionID: "3"}},
	}, got)
}

func TestEnvironmentsMayBeACommaSeparatedString(t *testing.T) {
	res := pcommon.NewResource()
	res.Attributes().PutStr("prime.run.model", "m")
	res.Attributes().PutStr("prime.run.environments", "gsm8k, vf-math@v2 ,")
	got, err := buildCreateRequest(res, Defaults{}, "")
	require.NoError(t, err)
	assert.Equal(t, []rft.Environment{{ID: "gsm8k"}, {ID: "vf-math", VersionID: "v2"}}, got.Environments)
}

func TestEveryBadSpecAttributeIsNamed(t *testing.T) {
	tests := []struct {
		name string
		set  func(pcommon.Map)
		want string
	}{
		{"no model anywhere", func(pcommon.Map) {}, "no base model: set the resource attribute prime.run.model or the exporter's run.model"},
		{"a fractional max_steps", func(m pcommon.Map) { m.PutStr("prime.run.model", "m"); m.PutDouble("prime.training.max_steps", 1.5) },
			"resource attribute prime.training.max_steps must be a non-negative int, got double 1.5"},
		{"a string seq_len", func(m pcommon.Map) { m.PutStr("prime.run.model", "m"); m.PutStr("prime.training.seq_len", "long") },
			"resource attribute prime.training.seq_len must be a non-negative int, got string long"},
		{"a run config that is not an object", func(m pcommon.Map) { m.PutStr("prime.run.model", "m"); m.PutStr("prime.run.config", "[1]") },
			"resource attribute prime.run.config must be a map or a JSON object string"},
		{"an environment list with a number", func(m pcommon.Map) {
			m.PutStr("prime.run.model", "m")
			m.PutEmptySlice("prime.run.environments").AppendEmpty().SetInt(3)
		}, "resource attribute prime.run.environments[0] must be a string, got int"},
		{"a model that is not a string", func(m pcommon.Map) { m.PutInt("prime.run.model", 1) }, "resource attribute prime.run.model must be a string, got int"},
		{"a run config map holding a NaN, which JSON cannot carry", func(m pcommon.Map) {
			m.PutStr("prime.run.model", "m")
			m.PutEmptyMap("prime.run.config").PutEmptyMap("trainer").PutDouble("lr", math.NaN())
		}, "resource attribute prime.run.config cannot be sent as JSON: json: unsupported value: NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := pcommon.NewResource()
			tt.set(res.Attributes())
			_, err := buildCreateRequest(res, Defaults{}, "")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
