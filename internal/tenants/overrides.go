package tenants

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync/atomic"

	"go.uber.org/zap"
	"go.yaml.in/yaml/v3"
)

// overrides are the limits tenants::limits::overrides_file gives some
// tenants, on top of the defaults (tenants::limits): a YAML map of
// platform user ids to any of bytes_per_second, records_per_second and
// burst_seconds, as Mimir's runtime overrides are. It is read at start (a
// file that cannot be read or is bad fails the start) and again by the
// reload loop, taking effect when its content changed: a file that cannot
// be read or is bad then keeps the last good overrides, with one error
// logged for each bad content, since a gateway that stopped for a bad
// edit would stop every tenant.
type overrides struct {
	file   string
	def    Limit
	logger *zap.Logger
	// byUser is replaced whole on each change, so that a request reads it
	// without a lock.
	byUser atomic.Pointer[map[string]Limit]
	// seen is the digest of the content last read, good or bad, and
	// readErr the last read error logged; only the reload loop writes them.
	seen    [sha256.Size]byte
	readErr string
}

// overrideKeys are the keys a tenant's entry may hold.
var overrideKeys = []string{"bytes_per_second", "records_per_second", "burst_seconds"}

func newOverrides(file string, def Limit, logger *zap.Logger) *overrides {
	o := &overrides{file: file, def: def, logger: logger}
	o.byUser.Store(&map[string]Limit{})
	return o
}

// of is user's limit.
func (o *overrides) of(user string) Limit {
	if l, ok := (*o.byUser.Load())[user]; ok {
		return l
	}
	return o.def
}

// load reads the file at start; "" is no file.
func (o *overrides) load() error {
	if o.file == "" {
		return nil
	}
	raw, err := os.ReadFile(o.file)
	if err != nil {
		return fmt.Errorf("tenants::limits::overrides_file: %w", err)
	}
	byUser, err := parseOverrides(o.file, raw, o.def)
	if err != nil {
		return err
	}
	o.seen = sha256.Sum256(raw)
	o.apply(byUser)
	return nil
}

// reload reads the file again and applies it when its content changed.
func (o *overrides) reload() {
	if o.file == "" {
		return
	}
	raw, err := os.ReadFile(o.file)
	if err != nil {
		if msg := err.Error(); msg != o.readErr {
			o.readErr = msg
			o.logger.Error("Cannot read the tenants' limit overrides: the last good ones stay", zap.String("overrides_file", o.file), zap.Error(err))
		}
		return
	}
	o.readErr = ""
	sum := sha256.Sum256(raw)
	if sum == o.seen {
		return
	}
	o.seen = sum
	byUser, err := parseOverrides(o.file, raw, o.def)
	if err != nil {
		o.logger.Error("The tenants' limit overrides are bad: the last good ones stay", zap.Error(err))
		return
	}
	o.apply(byUser)
}

// apply takes byUser as the overrides, with a line for each tenant whose
// limit it changes.
func (o *overrides) apply(byUser map[string]Limit) {
	old := *o.byUser.Swap(&byUser)
	users := slices.Sorted(maps.Keys(byUser))
	for user := range old {
		if _, ok := byUser[user]; !ok {
			users = append(users, user)
		}
	}
	slices.Sort(users)
	for _, user := range users {
		was, now := o.def, o.def
		if l, ok := old[user]; ok {
			was = l
		}
		_, overridden := byUser[user]
		if overridden {
			now = byUser[user]
		}
		if was == now {
			continue
		}
		source := "the overrides file"
		if !overridden {
			source = "tenants::limits (no override)"
		}
		o.logger.Info("A tenant's ingest limit changed", zap.String("tenant", user), zap.String("from", source),
			zap.Float64("bytes_per_second", now.BytesPerSecond), zap.Float64("records_per_second", now.RecordsPerSecond), zap.Float64("burst_seconds", now.BurstSeconds))
	}
}

// parseOverrides reads an overrides file: each tenant's keys on top of
// def. Every problem names the file, the tenant and the key.
func parseOverrides(file string, raw []byte, def Limit) (map[string]Limit, error) {
	var doc map[string]map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("tenants::limits::overrides_file %s: not a map of user ids to limits: %w", file, err)
	}
	out := make(map[string]Limit, len(doc))
	var errs []error
	for _, user := range slices.Sorted(maps.Keys(doc)) {
		prefix := fmt.Sprintf("tenants::limits::overrides_file %s: %s: ", file, user)
		l := def
		for _, key := range slices.Sorted(maps.Keys(doc[user])) {
			v, ok := number(doc[user][key])
			if !ok {
				errs = append(errs, fmt.Errorf("%s%s must be a number, got %v", prefix, key, doc[user][key]))
				continue
			}
			switch key {
			case "bytes_per_second":
				l.BytesPerSecond = v
			case "records_per_second":
				l.RecordsPerSecond = v
			case "burst_seconds":
				l.BurstSeconds = v
			default:
				errs = append(errs, fmt.Errorf("%sunknown key %q: use %v", prefix, key, overrideKeys))
			}
		}
		errs = append(errs, l.problems(prefix)...)
		out[user] = l
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// number is v as YAML gave it, when it is a number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
