package runstore

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// What a store does with a damaged value is the package doc's (Damage):
// salvage.go reads what is left of a record or an index.

// damageOf says how a value is damaged, for a log line.
func damageOf(err error) string {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok && se.Error() != "unexpected end of JSON input" {
		// Offset counts the bytes read, the bad one included.
		return fmt.Sprintf("garbled JSON at byte %d", max(se.Offset-1, 0))
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return fmt.Sprintf("%s holds a JSON %s", te.Field, te.Value)
	}
	return "truncated JSON"
}

// A record's fields in the order they are written (SavedRun's): first
// those that say how its run goes on (identity, platform id, team, state,
// end, Prime Traces routing), then the sample_id ranges, the pending
// uploads and an evaluation's state.
var (
	runCoreFields = []string{"key", "source", "value", "attach", "id", "team", "state", "end_status", "end_reason", "traces"}
	runTailFields = []string{"ranges_from", "ranges", "pending", "eval"}
)

// salvagedRun is what is left of a stored run record.
type salvagedRun struct {
	sr SavedRun
	// damage is "" for a record read whole.
	damage string
	// resumable: every core field written was read, so the run goes on
	// as it was; what came after the damage is in lost.
	resumable bool
	lost      []string
}

// salvageRun reads a run record field by field, keeping every whole field
// before the damage. A record read past its core fields goes on: its
// sample_id ranges, if they are lost, are replaced by a floor above every
// step, so that the run's next objects draw random ranges above every
// counted one; a lost pending upload is uploaded again under a new range
// when its batch is replayed. A record damaged within its core fields is
// left out: its state, its end or its id may be what is missing.
func salvageRun(runKey string, raw []byte) salvagedRun {
	fields, order, complete, cut := readObject(raw)
	var out salvagedRun
	if cut != nil {
		out.damage = damageOf(cut)
	}
	sr := &out.sr
	// coreRead: the record was read past its core fields, so any core
	// field not met was not written.
	coreRead := complete
	rangesOK, pendingOK, evalOK := true, true, true
	for _, name := range order {
		v, whole := fields[name]
		switch {
		case name == "ranges_from":
			rangesOK = whole && json.Unmarshal(v, &sr.RangesFrom) == nil && sr.RangesFrom >= 0
		case name == "ranges":
			rangesOK = whole && salvageRanges(v, sr)
		case name == "pending":
			pendingOK = whole && salvagePending(v, sr)
		case name == "eval":
			var ev SavedEval
			evalOK = whole && json.Unmarshal(v, &ev) == nil
			if evalOK {
				sr.Eval = &ev
			}
		case !slices.Contains(runCoreFields, name):
			if !coreRead {
				// Among the core fields: perhaps one of them, garbled.
				out.damage = cmp.Or(out.damage, fmt.Sprintf("unknown field %q", name))
				return out
			}
		case !whole:
		default:
			if err := json.Unmarshal(wrapField(name, v), sr); err != nil {
				out.damage = cmp.Or(out.damage, damageOf(err))
				return out
			}
		}
		_, tracesWhole := fields["traces"]
		coreRead = coreRead || slices.Contains(runTailFields, name) || tracesWhole
	}
	if !coreRead {
		return out
	}
	if !complete {
		// What followed the damage is unknown: whichever tail field the
		// run can have was lost.
		_, ranges := fields["ranges"]
		_, from := fields["ranges_from"]
		ranges = ranges || from
		_, pending := fields["pending"]
		_, eval := fields["eval"]
		rangesOK = rangesOK && (ranges || sr.Attach)
		// A record with ranges_from keeps no pending uploads (objects.go).
		pendingOK = pendingOK && (pending || from)
		evalOK = evalOK && (eval || !strings.HasPrefix(runKey, EvalKeyPrefix))
	}
	if !rangesOK {
		// Which steps counted how far is unknown: no step counts again.
		sr.Ranges = map[string]int64{RangeFloorKey: math.MaxInt64}
		out.lost = append(out.lost, "its sample_id ranges (its next objects take random ranges above every counted one)")
		out.damage = cmp.Or(out.damage, "ranges garbled")
	}
	if !pendingOK {
		out.lost = append(out.lost, "any pending uploads (uploaded again under new ranges when their batch is replayed)")
		out.damage = cmp.Or(out.damage, "pending uploads garbled")
	}
	if !evalOK {
		out.lost = append(out.lost, "its evaluation's summary and rollout numbers (they start anew)")
		out.damage = cmp.Or(out.damage, "evaluation state garbled")
	}
	switch {
	case sr.Key != runKey || sr.Source == "" || sr.Value == "":
		out.damage = cmp.Or(out.damage, "its identity does not match its key")
	case !validSavedState(sr.State):
		out.damage = cmp.Or(out.damage, fmt.Sprintf("unknown state %q", sr.State))
	default:
		out.resumable = true
	}
	return out
}

// readObject reads a JSON object's fields one by one, up to any damage:
// the whole values by name, every name met in order (the last one's value
// may be cut), whether the object was read to its end, and the error that
// stopped it.
func readObject(raw []byte) (fields map[string]json.RawMessage, order []string, complete bool, cut error) {
	fields = map[string]json.RawMessage{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		if err == nil {
			err = &json.UnmarshalTypeError{Value: "value other than an object", Field: "record"}
		}
		return fields, nil, false, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fields, order, false, err
		}
		name, _ := tok.(string)
		order = append(order, name)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fields, order, false, err
		}
		fields[name] = v
	}
	if _, err := dec.Token(); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fields, order, false, err
	}
	return fields, order, true, nil
}

func wrapField(name string, v json.RawMessage) []byte {
	n, _ := json.Marshal(name) // a string always marshals
	return append(append(append(append([]byte{'{'}, n...), ':'), v...), '}')
}

// salvageRanges reads the range counters; false when any is unreadable.
func salvageRanges(v json.RawMessage, sr *SavedRun) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil {
		return false
	}
	sr.Ranges = make(map[string]int64, len(m))
	for k, raw := range m {
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if _, stepErr := strconv.ParseInt(k, 10, 64); err != nil || n < 0 || (stepErr != nil && k != RangeFloorKey) {
			sr.Ranges = nil
			return false
		}
		sr.Ranges[k] = n
	}
	return true
}

// salvagePending keeps the readable pending uploads; false when any is
// not. An upload needs its fingerprint (hex), step and range: one read
// without them would be resumed under the wrong step.
func salvagePending(v json.RawMessage, sr *SavedRun) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil {
		return false
	}
	ok := true
	for k, raw := range m {
		so, err := readSavedObject(raw)
		if _, fpErr := strconv.ParseUint(k, 16, 64); err != nil || fpErr != nil {
			ok = false
			continue
		}
		if sr.Pending == nil {
			sr.Pending = map[string]SavedObject{}
		}
		sr.Pending[k] = so
	}
	return ok
}

// readSavedObject reads one pending upload, which must name its step and
// range.
func readSavedObject(raw []byte) (SavedObject, error) {
	var so SavedObject
	if err := json.Unmarshal(raw, &so); err != nil {
		return so, err
	}
	var has struct {
		Step  *int64 `json:"step"`
		Range *int64 `json:"range"`
	}
	if err := json.Unmarshal(raw, &has); err != nil || has.Step == nil || has.Range == nil || so.Range < 0 {
		return so, &json.UnmarshalTypeError{Value: "upload without its step or range", Field: "pending"}
	}
	return so, nil
}

// salvageIndex reads the run index, a JSON array of run keys, up to any
// damage.
func salvageIndex(raw []byte) (keys []string, damage string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		if err == nil {
			return nil, "not a JSON array"
		}
		return nil, damageOf(err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys, damageOf(err)
		}
		k, ok := tok.(string)
		if !ok {
			damage = cmp.Or(damage, fmt.Sprintf("an entry holds %v", tok))
			continue
		}
		keys = append(keys, k)
	}
	if _, err := dec.Token(); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return keys, damageOf(err)
	}
	return keys, damage
}
