package runs

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/rft"
)

// Resource attributes of an evaluation beyond a training run's.
const (
	attrEvalTags        = "prime.eval.tags"
	attrEvalFramework   = "prime.eval.framework"
	attrEvalDescription = "prime.eval.description"
)

// evalSpec is an evaluation's create, before its environments are
// resolved.
type evalSpec struct {
	refs []rft.EnvironmentRef
	req  rft.CreateEvaluationRequest
}

// buildEvalSpec maps an evaluation's resource to its create body (the
// OTLP mapping of evals-api.md). Every bad attribute is named.
func buildEvalSpec(res pcommon.Resource, teamID string) (evalSpec, error) {
	attrs := res.Attributes()
	var errs []error
	str := func(key string) string {
		v, _, err := stringAttr(attrs, key)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	var spec evalSpec
	spec.req = rft.CreateEvaluationRequest{
		Name:        str(attrRunName),
		ModelName:   str(attrRunModel),
		Framework:   str(attrEvalFramework),
		Description: str(attrEvalDescription),
		TeamID:      cmp.Or(str(AttrRunTeamID), teamID),
		Tags:        []string{},
	}
	if v, ok := attrs.Get(attrRunEnvironments); ok {
		list, err := stringList(attrRunEnvironments, v)
		if err != nil {
			errs = append(errs, err)
		}
		for _, e := range list {
			ref, err := rft.ParseEnvironmentRef(e)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", attrRunEnvironments, err))
				continue
			}
			spec.refs = append(spec.refs, ref)
		}
	}
	if len(spec.refs) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("an evaluation needs its environments: set the resource attribute %s", attrRunEnvironments))
	}
	if v, ok := attrs.Get(attrEvalTags); ok {
		tags, err := stringList(attrEvalTags, v)
		if err != nil {
			errs = append(errs, err)
		}
		spec.req.Tags = tags
	}
	if v, ok := attrs.Get(attrRunConfig); ok {
		m, err := runConfigMap(v)
		if err != nil {
			errs = append(errs, err)
		}
		spec.req.Metadata = m
	}
	if len(spec.refs) > 0 {
		spec.req.Dataset = spec.refs[0].ShortName()
		if spec.req.Name == "" {
			spec.req.Name = rft.DefaultEvaluationName(spec.refs[0].ShortName())
		}
	}
	return spec, errors.Join(errs...)
}

// evalCreation resolves the evaluation's environments through the hub and
// creates it. An environment the hub cannot resolve fails the create, and
// with it the run: nothing is created without every environment.
func (c *creator) evalCreation(r *run, res pcommon.Resource) (creation, error) {
	spec, err := buildEvalSpec(res, c.cfg.TeamID)
	if err != nil {
		return creation{}, refused(r.ident, fmt.Errorf("evaluation %s: %w", r.ident, err))
	}
	r.evalState().setMetadata(spec.req.Metadata)
	var viewer string
	return creation{
		team: spec.req.TeamID, model: spec.req.ModelName,
		where: func(id string) zap.Field {
			if viewer != "" {
				return zap.String("dashboard", viewer)
			}
			return c.cfg.WhereEval(id)
		},
		send: func(ctx context.Context) (string, error) {
			envs, err := c.evals.ResolveEnvironments(ctx, spec.refs, spec.req.TeamID)
			if err != nil {
				return "", fmt.Errorf("resolving the environments of %s: %w", attrRunEnvironments, err)
			}
			req := spec.req
			req.Environments = envs
			ev, err := c.evals.CreateEvaluation(ctx, req, platform.Origin{Identity: r.ident.String(), TeamID: req.TeamID})
			viewer = ev.ViewerURL
			return ev.ID, err
		},
	}, nil
}
