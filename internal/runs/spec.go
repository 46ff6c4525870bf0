package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/rft"
)

// Resource attributes that describe the run to create.
const (
	attrRunName            = "prime.run.name"
	attrRunModel           = "prime.run.model"
	attrRunEnvironments    = "prime.run.environments"
	AttrRunTeamID          = "prime.run.team_id"
	attrRunConfig          = "prime.run.config"
	attrMaxSteps           = "prime.training.max_steps"
	attrBatchSize          = "prime.training.batch_size"
	attrRolloutsPerExample = "prime.training.rollouts_per_example"
	attrSeqLen             = "prime.training.seq_len"
	attrWandbProject       = "prime.wandb.project"
	attrWandbEntity        = "prime.wandb.entity"
	attrWandbRunName       = "prime.wandb.run_name"
)

// Defaults are the exporter's run.* settings: the identity and spec of
// resources that carry none of their own. A resource attribute always wins
// over these.
type Defaults struct {
	// ID attaches every resource to this existing run (hosted launches:
	// ${env:RUN_ID}).
	ID string `mapstructure:"id"`
	// Key creates one run for every resource without an identity of its own.
	Key                string         `mapstructure:"key"`
	Name               string         `mapstructure:"name"`
	Model              string         `mapstructure:"model"`
	Environments       []string       `mapstructure:"environments"`
	MaxSteps           int64          `mapstructure:"max_steps"`
	BatchSize          int64          `mapstructure:"batch_size"`
	RolloutsPerExample int64          `mapstructure:"rollouts_per_example"`
	SeqLen             int64          `mapstructure:"seq_len"`
	Config             map[string]any `mapstructure:"config"`
	Wandb              Wandb          `mapstructure:"wandb"`
}

// Wandb links a W&B run.
type Wandb struct {
	Project string `mapstructure:"project"`
	Entity  string `mapstructure:"entity"`
	RunName string `mapstructure:"run_name"`
}

// Validate checks the run defaults.
func (d *Defaults) Validate() error {
	var errs []error
	if d.ID != "" && d.Key != "" {
		errs = append(errs, errors.New("id and key are mutually exclusive: id attaches to an existing run, key creates one"))
	}
	for i, env := range d.Environments {
		if _, err := parseEnvironment(env); err != nil {
			errs = append(errs, fmt.Errorf("environments[%d]: %w", i, err))
		}
	}
	if d.Config != nil {
		if _, err := json.Marshal(d.Config); err != nil {
			errs = append(errs, fmt.Errorf("config cannot be sent as JSON (NaN and infinities cannot): %w", err))
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"max_steps", d.MaxSteps}, {"batch_size", d.BatchSize},
		{"rollouts_per_example", d.RolloutsPerExample}, {"seq_len", d.SeqLen},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %d", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// buildCreateRequest maps a resource to the create body, the resource
// winning over the defaults. Every bad attribute is named.
func buildCreateRequest(res pcommon.Resource, d Defaults, teamID string) (rft.CreateRunRequest, error) {
	attrs := res.Attributes()
	var errs []error
	str := func(key, fallback string) string {
		v, ok, err := stringAttr(attrs, key)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			return v
		}
		return fallback
	}
	integer := func(key string, fallback int64) int64 {
		v, ok := attrs.Get(key)
		if !ok {
			return fallback
		}
		n, isInt := pvalue.Int(v)
		if !isInt || n < 0 {
			errs = append(errs, fmt.Errorf("resource attribute %s must be a non-negative int, got %s", key, describe(v)))
			return fallback
		}
		return n
	}

	req := rft.CreateRunRequest{
		BaseModel:          str(attrRunModel, d.Model),
		MaxSteps:           integer(attrMaxSteps, d.MaxSteps),
		TeamID:             str(AttrRunTeamID, teamID),
		Name:               str(attrRunName, d.Name),
		BatchSize:          integer(attrBatchSize, d.BatchSize),
		RolloutsPerExample: integer(attrRolloutsPerExample, d.RolloutsPerExample),
		SeqLen:             integer(attrSeqLen, d.SeqLen),
		WandbProject:       str(attrWandbProject, d.Wandb.Project),
		WandbEntity:        str(attrWandbEntity, d.Wandb.Entity),
		WandbRunName:       str(attrWandbRunName, d.Wandb.RunName),
		RunConfig:          d.Config,
		Environments:       []rft.Environment{},
	}
	if req.BaseModel == "" {
		errs = append(errs, errors.New("no base model: set the resource attribute prime.run.model or the exporter's run.model"))
	}

	envs := d.Environments
	if v, ok := attrs.Get(attrRunEnvironments); ok {
		list, err := stringList(attrRunEnvironments, v)
		if err != nil {
			errs = append(errs, err)
		} else {
			envs = list
		}
	}
	for _, e := range envs {
		env, err := parseEnvironment(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", attrRunEnvironments, err))
			continue
		}
		req.Environments = append(req.Environments, env)
	}

	if v, ok := attrs.Get(attrRunConfig); ok {
		m, err := runConfigMap(v)
		if err != nil {
			errs = append(errs, err)
		} else {
			req.RunConfig = m
		}
	}
	return req, errors.Join(errs...)
}

// stringList reads a list attribute: a string array or a comma-separated
// string, each item trimmed.
func stringList(key string, v pcommon.Value) ([]string, error) {
	out := []string{}
	switch v.Type() {
	case pcommon.ValueTypeStr:
		for part := range strings.SplitSeq(v.Str(), ",") {
			if p := strings.TrimSpace(part); p != "" {
				out = append(out, p)
			}
		}
	case pcommon.ValueTypeSlice:
		for i, item := range v.Slice().All() {
			s, ok := pvalue.String(item)
			if !ok {
				return nil, fmt.Errorf("resource attribute %s[%d] must be a string, got %s", key, i, pvalue.TypeName(item))
			}
			out = append(out, strings.TrimSpace(s))
		}
	default:
		return nil, fmt.Errorf("resource attribute %s must be a string array or a comma-separated string, got %s", key, pvalue.TypeName(v))
	}
	return out, nil
}

// parseEnvironment passes an environment through as given; only
// "<env>@<version>" (split at the last @, both sides non-empty) pins a
// version. Anything else with an @ is a slug that happens to hold one.
func parseEnvironment(s string) (rft.Environment, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return rft.Environment{}, errors.New("an environment must not be empty")
	}
	if i := strings.LastIndex(s, "@"); i > 0 && i < len(s)-1 {
		return rft.Environment{ID: s[:i], VersionID: s[i+1:]}, nil
	}
	return rft.Environment{ID: s}, nil
}

// runConfigMap accepts a map, or a string holding a JSON object.
func runConfigMap(v pcommon.Value) (map[string]any, error) {
	switch v.Type() {
	case pcommon.ValueTypeMap:
		// A map can hold NaN or ±Inf, which JSON cannot carry: refused
		// here, named, instead of failing every create (or, offline, every
		// retry) with an encoder error.
		m := v.Map().AsRaw()
		if _, err := json.Marshal(m); err != nil {
			return nil, fmt.Errorf("resource attribute %s cannot be sent as JSON: %w", attrRunConfig, err)
		}
		return m, nil
	case pcommon.ValueTypeStr:
		var m map[string]any
		err := json.Unmarshal([]byte(v.Str()), &m)
		if err == nil && m == nil {
			err = errors.New("not an object")
		}
		if err != nil {
			return nil, fmt.Errorf("resource attribute %s must be a map or a JSON object string: %w", attrRunConfig, err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("resource attribute %s must be a map or a JSON object string, got %s", attrRunConfig, pvalue.TypeName(v))
}

// describe names a value's type and, for scalars, the value itself.
func describe(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeMap, pcommon.ValueTypeSlice, pcommon.ValueTypeBytes:
		return pvalue.TypeName(v)
	}
	return fmt.Sprintf("%s %s", pvalue.TypeName(v), v.AsString())
}
