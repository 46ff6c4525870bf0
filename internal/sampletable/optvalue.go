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

// pick is member key of a map; absent for anything else.
func (o optValue) pick(key string) optValue {
	var out optValue
	_, _ = o.forMembers(func(k string, mv value) error {
		if k == key {
			out = opt(mv)
		}
		return nil
	})
	return out
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
