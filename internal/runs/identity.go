package runs

import (
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/runstore"
)

// Resource attributes that say which run a resource belongs to.
const (
	AttrRunID           = "prime.run.id"
	AttrRunKey          = "prime.run.key"
	AttrServiceInstance = "service.instance.id"
	AttrRunKind         = "prime.run.kind"
)

// errNoIdentity names every attribute that could have placed the data.
var errNoIdentity = errors.New("resource has no run identity: set the resource attribute prime.run.id (attach), prime.run.key or service.instance.id (create), or the exporter's run.id / run.key")

// identity is what a resource says about its run: where it came from
// (for log lines and errors) and the value.
type identity struct {
	source string // the attribute or config key the value came from
	value  string
	attach bool // an existing platform run: no create request
	eval   bool // an evaluation (prime.run.kind=eval), not a training run
}

// key places identities that mean the same run on one entry: a
// prime.run.key and a config run.key of the same value are one run.
func (id identity) key() string {
	kind := runstore.KindRunKey
	switch {
	case id.attach:
		kind = runstore.KindAttached
	case id.source == AttrServiceInstance:
		kind = runstore.KindInstance
	}
	return runstore.RunKey(kind, id.value, id.eval)
}

// savedIdentity rebuilds an identity from its store record; an
// evaluation's is known by its key.
func savedIdentity(sr runstore.SavedRun) identity {
	return identity{source: sr.Source, value: sr.Value, attach: sr.Attach, eval: strings.HasPrefix(sr.Key, runstore.EvalKeyPrefix)}
}

func (id identity) String() string { return fmt.Sprintf("%s=%q", id.source, id.value) }

// Run kinds (prime.run.kind).
const (
	KindTrain = "train"
	KindEval  = "eval"
)

// resolveIdentity applies the contract's order, first match wins. An
// evaluation's identity follows the same order, except that the run.id and
// run.key config keys are the training run's: evalID (eval.id) attaches
// an evaluation instead.
func resolveIdentity(res pcommon.Resource, d Defaults, evalID string) (identity, error) {
	if runKind(res) == KindEval {
		id, err := identityOf(res, Defaults{ID: evalID})
		id.eval = true
		if id.source == "run.id" {
			id.source = "eval.id"
		}
		return id, err
	}
	return identityOf(res, d)
}

// identityOf is the contract's order over res and d.
func identityOf(res pcommon.Resource, d Defaults) (identity, error) {
	attrs := res.Attributes()
	if v, ok, err := stringAttr(attrs, AttrRunID); err != nil || ok {
		return identity{source: AttrRunID, value: v, attach: true}, err
	}
	if d.ID != "" {
		return identity{source: "run.id", value: d.ID, attach: true}, nil
	}
	if v, ok, err := stringAttr(attrs, AttrRunKey); err != nil || ok {
		return identity{source: AttrRunKey, value: v}, err
	}
	if d.Key != "" {
		return identity{source: "run.key", value: d.Key}, nil
	}
	if v, ok, err := stringAttr(attrs, AttrServiceInstance); err != nil || ok {
		return identity{source: AttrServiceInstance, value: v}, err
	}
	return identity{}, errNoIdentity
}

// runKind reads prime.run.kind; "train" is the default.
func runKind(res pcommon.Resource) string {
	if v, ok := res.Attributes().Get(AttrRunKind); ok {
		if s, isStr := pvalue.String(v); isStr && s != "" {
			return s
		}
		return pvalue.TypeName(v)
	}
	return KindTrain
}

// stringAttr reads a non-empty string attribute; an empty string counts as
// absent so that an unset ${env:…} does not become an identity.
func stringAttr(attrs pcommon.Map, key string) (string, bool, error) {
	v, ok := attrs.Get(key)
	if !ok {
		return "", false, nil
	}
	s, isStr := pvalue.String(v)
	if !isStr {
		return "", false, fmt.Errorf("resource attribute %s must be a string, got %s", key, pvalue.TypeName(v))
	}
	return s, s != "", nil
}
