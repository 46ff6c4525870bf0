package sampletable

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
)

// A native document is walked through value, like a column-keyed record:
// pdata for a map body, spans of the compact JSON text for a string body,
// so one projection serves both and text is never decoded into values.
// Text was checked once, when the body was read, and is not checked again:
// a walk reads the body's structural index (jsonindex_walk.go), passing
// over a container in one step, or, for text without one, skips a value
// by its brackets and quotes (skipValue). At 200 KB skipValue took the
// walks of a document's traces and nodes, which read its token arrays
// number by number at each level, from two fifths of mapping it to a
// fifth (BenchmarkVerifiersMap, native and tokens); the index took them
// to a few per cent.
// Each level is walked once, picking out the members it needs; a member
// given twice takes its last value, as encoding/json and Python's
// json.loads do.

// isNull tells a JSON null, or an empty pdata value: what a document's
// producer writes for None.
func (f value) isNull() bool {
	if f.raw != "" {
		return f.raw == "null"
	}
	return f.v.Type() == pcommon.ValueTypeEmpty
}

// isMap tells a map, or the text of a JSON object.
func (f value) isMap() bool {
	if f.raw != "" {
		return f.raw[0] == '{'
	}
	return f.v.Type() == pcommon.ValueTypeMap
}

// forMembers calls fn for each member of a map, in order, and stops at its
// first error. isMap is false, and fn is not called, for anything else.
func (f value) forMembers(fn func(key string, v value) error) (isMap bool, err error) {
	if f.raw == "" {
		if f.v.Type() != pcommon.ValueTypeMap {
			return false, nil
		}
		f.v.Map().Range(func(k string, v pcommon.Value) bool {
			err = fn(k, value{v: v})
			return err == nil
		})
		return true, err
	}
	if f.raw[0] != '{' {
		return false, nil
	}
	if f.ix != nil {
		return true, f.ix.keyedMembers(f.at, fn)
	}
	// The text was checked when the body was read: the walk checks
	// nothing again (walkMembers) and cannot fail but through fn.
	_, err = walkMembers(f.raw, 0, func(k, v string) error { return fn(unquote(k), value{raw: v}) })
	return true, err
}

// forMapElements walks a list of maps: member gets each member of each
// element, in order, and done the element's index after its last; an
// element that is not a map goes to notMap instead. It stops at the first
// error. Text is read in one pass, where walking the list, then each
// element, would read every element twice: traces and nodes hold nearly
// all of a document.
func (f value) forMapElements(member func(key string, v value) error, done func(i int) error, notMap func(i int, v value) error) (isList bool, err error) {
	if f.raw == "" {
		if f.v.Type() != pcommon.ValueTypeSlice {
			return false, nil
		}
		sl := f.v.Slice()
		for i := 0; i < sl.Len() && err == nil; i++ {
			el := value{v: sl.At(i)}
			if el.v.Type() != pcommon.ValueTypeMap {
				err = notMap(i, el)
				continue
			}
			if _, err = el.forMembers(member); err == nil {
				err = done(i)
			}
		}
		return true, err
	}
	if f.raw[0] != '[' {
		return false, nil
	}
	if f.ix != nil {
		return true, f.ix.elements(f.at, func(i int, el value) error {
			if el.raw[0] != '{' {
				return notMap(i, el)
			}
			if err := el.ix.keyedMembers(el.at, member); err != nil {
				return err
			}
			return done(i)
		})
	}
	err = eachElement(f.raw, func(i, start int) (int, error) {
		if f.raw[start] != '{' {
			end := skipValue(f.raw, start)
			return end, notMap(i, value{raw: f.raw[start:end]})
		}
		end, err := walkMembers(f.raw, start, func(k, v string) error { return member(unquote(k), value{raw: v}) })
		if err != nil {
			return end, err
		}
		return end, done(i)
	})
	return true, err
}

// writeJSON writes the value as JSON: text as it is, pdata through pjson.
func (f value) writeJSON(sb *pjson.Buffer) {
	if f.raw != "" {
		sb.WriteString(f.raw)
		return
	}
	pjson.Write(sb, f.v)
}

// jsonSize is the length of the value's JSON, estimated for pdata.
func (f value) jsonSize() int {
	if f.raw != "" {
		return len(f.raw)
	}
	return pjson.Size(f.v)
}

// json is the value's JSON.
func (f value) json() string {
	if f.raw != "" {
		return f.raw
	}
	return pjson.Encode(f.v)
}
