package sampletable

import (
	"errors"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// EvalBody is the body of a prime.episode record of an evaluation run,
// read: a native document, or any other JSON object.
type EvalBody struct {
	doc    *document
	object string
}

// ReadEvalBody reads the body of an evaluation's prime.episode record: a
// map, or a string holding a JSON object (Python's NaN and ±Infinity taken
// as null). A body with a top-level traces list is a native document; any
// other object is kept as compact JSON, key order and numbers as sent,
// NaN and ±Inf as null. Anything else (no body, other text, another type)
// is a *reject.Rejection (reject.BadBody): an evaluation's episode has no
// columns in attributes, so a body that is not an object holds no sample.
func ReadEvalBody(v pcommon.Value) (EvalBody, error) {
	var b body
	switch v.Type() {
	case pcommon.ValueTypeMap:
		b = body{v: v, m: v.Map(), hasMap: true}
	case pcommon.ValueTypeStr:
		s := v.Str()
		if firstNonSpace(s) != '{' {
			return EvalBody{}, rejection(reject.BadBody, bodyField, "an evaluation's episode body must be a map or a string holding a JSON object, got text that is not one")
		}
		s = validText(s)
		var err error
		if b, err = objectBody(s, nil, nil); err != nil {
			py, changed := RewriteJSON(s, false, true)
			if !changed {
				return EvalBody{}, rejection(reject.BadBody, bodyField, "body looks like a JSON object but does not parse: %v", err)
			}
			if b, err = objectBody(py, nil, nil); err != nil {
				return EvalBody{}, rejection(reject.BadBody, bodyField, "body looks like a JSON object but does not parse: %v", err)
			}
		}
	default:
		return EvalBody{}, rejection(reject.BadBody, bodyField, "an evaluation's episode body must be a map or a string holding a JSON object, got %s", pvalue.TypeName(v))
	}
	if b.isDocument() {
		d := readDocument(b)
		return EvalBody{doc: &d}, nil
	}
	if b.hasMap {
		return EvalBody{object: pjson.Encode(b.v)}, nil
	}
	if b.compact {
		return EvalBody{object: b.text}, nil
	}
	text, _ := RewriteJSON(b.text, true, false)
	return EvalBody{object: text}, nil
}

// IsDocument tells a native document.
func (b EvalBody) IsDocument() bool { return b.doc != nil }

// Object is a body that is not a native document, as compact JSON text;
// "" for a native document.
func (b EvalBody) Object() string { return b.object }

// EachMember calls fn with every member of the JSON object text object, in
// order, its key decoded and its value as JSON text, until fn returns
// false. It calls nothing for text that is not one JSON object.
func EachMember(object string, fn func(key, value string) bool) {
	stop := errors.New("stop")
	_, _ = scanMembers(object, func(k, v string) error {
		if !fn(unquote(k), v) {
			return stop
		}
		return nil
	})
}
