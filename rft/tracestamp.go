package rft

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
)

// StampRun returns a compact copy of one episode document with the
// platform run stamped where Prime Traces reads it, trace.run.id, so that
// the dashboard finds the run's episodes.
//
// The SDK never overwrites a run already on a document, and prime-rl puts
// its own run (its type, the trainer's own id, its work) on every episode,
// so its documents would reach Prime Traces without the platform run id.
// StampRun therefore puts the platform id in and keeps the trainer's:
//
//   - on the document and on every member trace of "traces", a run object
//     gets run.id = runID; an id that was there and differs (any non-null,
//     non-"" value) moves to run.trainer_run_id, right after id, unless the
//     run already has a trainer_run_id; an object without id gets id last.
//     Every other key of the run (type, name, work, …) stays where it was;
//   - a document with no run (missing, null, {}, or not an object: what the
//     SDK counts as none) gets {"id": runID, "type": runType};
//   - a member trace with no run gets a copy of the document's stamped run.
//
// Everything else is kept byte for byte, compacted: the order of keys, and
// numbers exactly as written (1 stays 1, not 1.0). Member traces that are
// not objects are left for the service to refuse. A document that is not a
// JSON object is an error, and so are an empty runID or runType.
func StampRun(doc []byte, runID, runType string) ([]byte, error) {
	switch {
	case runID == "":
		return nil, errors.New("prime: stamp run: the run id is empty")
	case runType == "":
		return nil, errors.New("prime: stamp run: the run type is empty")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, doc); err != nil {
		return nil, errors.New("prime: stamp run: the document is not valid JSON: " + err.Error())
	}
	members, ok := objectMembers(compact.Bytes())
	if !ok {
		return nil, errors.New("prime: stamp run: the document is not a JSON object")
	}
	fresh := joinObject([]member{{jsonString("id"), jsonString(runID)}, {jsonString("type"), jsonString(runType)}})

	var docRun []byte
	for i := range members {
		if members[i].is("run") {
			members[i].value = stampedRun(members[i].value, runID, fresh)
			docRun = members[i].value // a decoder keeps the last of duplicates
		}
	}
	if docRun == nil {
		docRun = fresh
		members = append(members, member{jsonString("run"), fresh})
	}
	for i := range members {
		if members[i].is("traces") {
			members[i].value = stampTraces(members[i].value, runID, docRun)
		}
	}
	return joinObject(members), nil
}

// stampTraces stamps every member trace of a traces list; anything but a
// list is left as it is.
func stampTraces(list []byte, runID string, docRun []byte) []byte {
	elems, ok := arrayElements(list)
	if !ok {
		return list
	}
	for i, e := range elems {
		trace, ok := objectMembers(e)
		if !ok {
			continue
		}
		found := false
		for j := range trace {
			if trace[j].is("run") {
				trace[j].value = stampedRun(trace[j].value, runID, docRun)
				found = true
			}
		}
		if !found {
			trace = append(trace, member{jsonString("run"), docRun})
		}
		elems[i] = joinObject(trace)
	}
	return joinArray(elems)
}

// stampedRun is run with the platform id in place, or none when run is no
// run at all.
func stampedRun(run []byte, runID string, none []byte) []byte {
	members, ok := objectMembers(run)
	if !ok || len(members) == 0 {
		return none
	}
	id := jsonString(runID)
	var trainer []byte
	last, hasTrainer := -1, false
	for i := range members {
		switch {
		case members[i].is("id"):
			if old := members[i].value; !isNone(old) && !isString(old, runID) {
				trainer = old
			}
			members[i].value = id
			last = i
		case members[i].is("trainer_run_id"):
			hasTrainer = true
		}
	}
	switch {
	case last < 0:
		members = append(members, member{jsonString("id"), id})
	case trainer != nil && !hasTrainer:
		members = slices.Insert(members, last+1, member{jsonString("trainer_run_id"), trainer})
	}
	return joinObject(members)
}

// isNone reports an id that names nothing: null or "".
func isNone(v []byte) bool { return string(v) == "null" || string(v) == `""` }

// isString reports whether v is the JSON string s, however it was escaped.
func isString(v []byte, s string) bool {
	var got string
	return json.Unmarshal(v, &got) == nil && got == s
}

// member is one key and value of a JSON object, both as their compact
// JSON text, the key with its quotes and escapes as written.
type member struct {
	key, value []byte
}

// is reports whether the key is name, however it was escaped.
func (m member) is(name string) bool {
	if bytes.IndexByte(m.key, '\\') < 0 {
		return string(m.key) == `"`+name+`"`
	}
	return isString(m.key, name)
}

// The scanners below read compact JSON that json.Compact has already
// checked, so they only find where each value ends. They return slices of
// their input.

// objectMembers splits a JSON object into its members; ok=false when v is
// not an object.
func objectMembers(v []byte) (members []member, ok bool) {
	if len(v) < 2 || v[0] != '{' {
		return nil, false
	}
	members = []member{}
	for i := 1; v[i] != '}'; {
		keyEnd := valueEnd(v, i)
		end := valueEnd(v, keyEnd+1) // past the ':'
		members = append(members, member{v[i:keyEnd], v[keyEnd+1 : end]})
		i = end
		if v[i] == ',' {
			i++
		}
	}
	return members, true
}

// arrayElements splits a JSON array into its elements; ok=false when v is
// not an array.
func arrayElements(v []byte) (elems [][]byte, ok bool) {
	if len(v) < 2 || v[0] != '[' {
		return nil, false
	}
	for i := 1; v[i] != ']'; {
		end := valueEnd(v, i)
		elems = append(elems, v[i:end])
		i = end
		if v[i] == ',' {
			i++
		}
	}
	return elems, true
}

// valueEnd is the index just past the value that starts at v[i].
func valueEnd(v []byte, i int) int {
	switch v[i] {
	case '"':
		for j := i + 1; ; j++ {
			switch v[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
	case '{', '[':
		depth := 0
		for j := i; ; {
			switch v[j] {
			case '"':
				j = valueEnd(v, j)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
		}
	}
	j := i // a number, true, false or null
	for j < len(v) && v[j] != ',' && v[j] != '}' && v[j] != ']' {
		j++
	}
	return j
}

func joinObject(members []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m.key)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func joinArray(elems [][]byte) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// jsonString is s as a JSON string.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
