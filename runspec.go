package primeexporter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/rft"
)

// Resource attributes that describe the run to create (telemetry.md §1).
const (
	attrRunName            = "prime.run.name"
	attrRunModel           = "prime.run.model"
	attrRunEnvironments    = "prime.run.environments"
	attrRunTeamID          = "prime.run.team_id"
	attrRunConfig          = "prime.run.config"
	attrMaxSteps           = "prime.training.max_steps"
	attrBatchSize          = "prime.training.batch_size"
	attrRolloutsPerExample = "prime.training.rollouts_per_example"
	attrSeqLen             = "prime.training.seq_len"
	attrWandbProject       = "prime.wandb.project"
	attrWandbEntity        = "prime.wandb.entity"
	attrWandbRunName       = "prime.wandb.run_name"
)

// buildCreateRequest maps a resource to the create body, the resource
// winning over the exporter's run defaults. Every bad attribute is named.
func buildCreateRequest(res pcommon.Resource, cfg *Config) (rft.CreateRunRequest, error) {
	attrs := res.Attributes()
	rc := cfg.Run
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
		BaseModel:          str(attrRunModel, rc.Model),
		MaxSteps:           integer(attrMaxSteps, rc.MaxSteps),
		TeamID:             str(attrRunTeamID, cfg.TeamID),
		Name:               str(attrRunName, rc.Name),
		BatchSize:          integer(attrBatchSize, rc.BatchSize),
		RolloutsPerExample: integer(attrRolloutsPerExample, rc.RolloutsPerExample),
		SeqLen:             integer(attrSeqLen, rc.SeqLen),
		WandbProject:       str(attrWandbProject, rc.Wandb.Project),
		WandbEntity:        str(attrWandbEntity, rc.Wandb.Entity),
		WandbRunName:       str(attrWandbRunName, rc.Wandb.RunName),
		RunConfig:          rc.Config,
		Environments:       []rft.Environment{},
	}
	if req.BaseModel == "" {
		errs = append(errs, errors.New("no base model: set the resource attribute prime.run.model or the exporter's run.model"))
	}

	envs := rc.Environments
	if v, ok := attrs.Get(attrRunEnvironments); ok {
		list, err := environmentList(v)
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

// environmentList accepts a string array or a comma-separated string.
func environmentList(v pcommon.Value) ([]string, error) {
	var out []string
	switch v.Type() {
	case pcommon.ValueTypeStr:
		for _, part := range strings.Split(v.Str(), ",") {
			if p := strings.TrimSpace(part); p != "" {
				out = append(out, p)
			}
		}
	case pcommon.ValueTypeSlice:
		for i, item := range v.Slice().All() {
			s, ok := pvalue.String(item)
			if !ok {
				return nil, fmt.Errorf("resource attribute %s[%d] must be a string, got %s", attrRunEnvironments, i, pvalue.TypeName(item))
			}
			out = append(out, strings.TrimSpace(s))
		}
	default:
		return nil, fmt.Errorf("resource attribute %s must be a string array or a comma-separated string, got %s", attrRunEnvironments, pvalue.TypeName(v))
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
		if err := json.Unmarshal([]byte(v.Str()), &m); err != nil || m == nil {
			return nil, fmt.Errorf("resource attribute %s must be a map or a JSON object string: %s", attrRunConfig, firstErr(err, "not an object"))
		}
		return m, nil
	}
	return nil, fmt.Errorf("resource attribute %s must be a map or a JSON object string, got %s", attrRunConfig, pvalue.TypeName(v))
}

func firstErr(err error, fallback string) string {
	if err != nil {
		return err.Error()
	}
	return fallback
}

// describe names a value's type and, for scalars, the value itself.
func describe(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeMap, pcommon.ValueTypeSlice, pcommon.ValueTypeBytes:
		return pvalue.TypeName(v)
	}
	return fmt.Sprintf("%s %s", pvalue.TypeName(v), v.AsString())
}
