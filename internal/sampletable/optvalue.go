package sampletable

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// optValue is a value that may be absent; null is absent. Its methods
// take absence as a value of no type, so a walk need not check first.
type optValue struct {
	value
	ok bool
}

func opt(v value) optValue { return optValue{v, !v.isNull()} }

// pick is member key of a map; absent for anything else. key is a name
// with no escape in it, as every caller's is.
func (o optValue) pick(key string) optValue {
	if o.ok && o.ix != nil && o.raw != "" && o.raw[0] == '{' {
		var out [1]optValue
		o.ix.pickInto(o.at, []string{key}, out[:])
		return out[0]
	}
	var out optValue
	_, _ = o.forMembers(func(k string, mv value) error {
		if k == key {
			out = opt(mv)
		}
		return nil
	})
	return out
}

// forPicked walks a list of maps as forMapElements does, but done finds
// each element's members named keys in picked (absent for none) rather
// than member taking every member: the list's index, when it has one, is
// read for those members alone (jsonIndex.pickInto). keys have no escape.
func (o optValue) forPicked(keys []string, picked []optValue, done func(i int) error, notMap func(i int, v value) error) (isList bool, err error) {
	if !o.ok {
		return false, nil
	}
	if o.ix == nil || o.raw == "" {
		clear(picked)
		return o.value.forMapElements(func(k string, v value) error {
			for j, key := range keys {
				if k == key {
					picked[j] = opt(v)
				}
			}
			return nil
		}, func(i int) error {
			err := done(i)
			clear(picked)
			return err
		}, notMap)
	}
	if o.raw[0] != '[' {
		return false, nil
	}
	return true, o.ix.elements(o.at, func(i int, el value) error {
		if el.raw[0] != '{' {
			return notMap(i, el)
		}
		o.ix.pickInto(el.at, keys, picked)
		return done(i)
	})
}

func (o optValue) forMembers(fn func(key string, v value) error) (isMap bool, err error) {
	if !o.ok {
		return false, nil
	}
	return o.value.forMembers(fn)
}

func (o optValue) forMapElements(member func(key string, v value) error, done func(i int) error, notMap func(i int, v value) error) (isList bool, err error) {
	if !o.ok {
		return false, nil
	}
	return o.value.forMapElements(member, done, notMap)
}

func (o optValue) str() (string, bool) {
	if !o.ok {
		return "", false
	}
	return o.value.str()
}

func (o optValue) int() (int64, bool) {
	if !o.ok {
		return 0, false
	}
	return o.value.int()
}

func (o optValue) float() (float64, bool) {
	if !o.ok {
		return 0, false
	}
	return o.value.float()
}

// orNull is the value, or JSON null when it is absent.
func (o optValue) orNull() value {
	if o.ok {
		return o.value
	}
	return value{raw: "null"}
}

// isTrue tells the bool true.
func (o optValue) isTrue() bool {
	return o.ok && (o.raw == "true" || (o.raw == "" && o.v.Type() == pcommon.ValueTypeBool && o.v.Bool()))
}
