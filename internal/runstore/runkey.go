package runstore

import (
	"strconv"
	"strings"
)

// A run's key in a store is <kind>\x00<value>, with EvalKeyPrefix before an
// evaluation's: the run lifecycle makes it from the run's identity, and
// one key is one run. A store reads a key back only to name its run in a
// log line and to mend a record that lost its identity fields.
const (
	KindAttached = "id"       // prime.run.id or the config's run.id: an existing platform run
	KindRunKey   = "key"      // prime.run.key or the config's run.key
	KindInstance = "instance" // service.instance.id
	// EvalKeyPrefix starts the key of an evaluation: an evaluation and a
	// training run of the same key are two runs.
	EvalKeyPrefix = "eval\x00"
)

// The attribute a key of each kind is read back as (a config run.key
// reads as prime.run.key).
const (
	sourceRunID    = "prime.run.id"
	sourceRunKey   = "prime.run.key"
	sourceInstance = "service.instance.id"
)

// RunKey is the store key of a run of kind (KindAttached, KindRunKey,
// KindInstance) and value.
func RunKey(kind, value string, eval bool) string {
	k := kind + "\x00" + value
	if eval {
		return EvalKeyPrefix + k
	}
	return k
}

// keyIdentity reads a run's identity back from its store key, for a
// record that lost its own identity fields: the source is the attribute a
// key of that kind comes from.
func keyIdentity(runKey string) (source, value string, attach, ok bool) {
	k := strings.TrimPrefix(runKey, EvalKeyPrefix)
	kind, value, _ := strings.Cut(k, "\x00")
	switch kind {
	case KindAttached:
		return sourceRunID, value, true, true
	case KindRunKey:
		return sourceRunKey, value, false, true
	case KindInstance:
		return sourceInstance, value, false, true
	}
	return "", "", false, false
}

// runName names a run by its store key, for a log line:
// prime.run.key="a", evaluation prime.run.id="e".
func runName(runKey string) string {
	source, value, _, ok := keyIdentity(runKey)
	if !ok {
		return strconv.Quote(runKey)
	}
	name := source + "=" + strconv.Quote(value)
	if strings.HasPrefix(runKey, EvalKeyPrefix) {
		return "evaluation " + name
	}
	return name
}
