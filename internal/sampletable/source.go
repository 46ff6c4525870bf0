package sampletable

import (
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// attrPrefix: attribute prime.episode.<column> gives a column, ahead of the
// body key <column> (telemetry.md §3).
const attrPrefix = "prime.episode."

// bodyField names the body itself in rejections.
const bodyField = "body"

// rejection is a record that cannot become a row. Its message starts with
// the event name, as every prime.episode message users see does.
func rejection(reason reject.Reason, field, format string, args ...any) *reject.Rejection {
	return reject.New(reason, field, "prime.episode: "+format, args...)
}

// value is a value as a record gives it: a pdata value, or the JSON text
// of a value read from a body given as JSON text. Text is read in place,
// not turned into pdata: most of it is stored as it is.
type value struct {
	v   pcommon.Value // when raw is ""
	raw string
	// ix is the index of the text raw is a span of, when it has one, and
	// at raw's entry in it: the walks of a string or container read it
	// (jsonindex_walk.go). A number or literal has none.
	ix *jsonIndex
	at uint32
}

// field is one column's value as the record gives it.
type field struct {
	column   string
	fromAttr bool
	value
}

// key is the attribute or body key concerned, for reject.Rejection.Field.
func (f field) key() string {
	if f.fromAttr {
		return attrPrefix + f.column
	}
	return bodyField + "." + f.column
}

// name says where the value came from, for messages.
func (f field) name() string {
	if f.fromAttr {
		return "attribute " + attrPrefix + f.column
	}
	return "body key " + f.column
}

func (f value) typeName() string {
	if f.raw != "" {
		return jsonKind(f.raw)
	}
	return pvalue.TypeName(f.v)
}

// str reads a string value.
func (f value) str() (string, bool) {
	if f.raw != "" {
		if f.raw[0] != '"' {
			return "", false
		}
		return unquote(f.raw), true
	}
	return pvalue.String(f.v)
}

// int reads an int value leniently (pvalue.Int): an int, or a double with
// an integral value.
func (f value) int() (int64, bool) {
	if f.raw == "" {
		return pvalue.Int(f.v)
	}
	if !isJSONNumber(f.raw) {
		return 0, false
	}
	if !strings.ContainsAny(f.raw, ".eE") {
		if n, err := strconv.ParseInt(f.raw, 10, 64); err == nil {
			return n, true
		}
	}
	return pvalue.Int(pcommon.NewValueDouble(parseJSONFloat(f.raw)))
}

// float reads a number value leniently (pvalue.Float): a double or an int.
func (f value) float() (float64, bool) {
	if f.raw == "" {
		return pvalue.Float(f.v)
	}
	if !isJSONNumber(f.raw) {
		return 0, false
	}
	return parseJSONFloat(f.raw), true
}

// describe names the type found and, when it is short and says more (a
// fractional step, a numeric string), the value.
func (f value) describe() string {
	t := f.typeName()
	switch {
	case t == "double" && f.raw != "":
		return t + " " + strconv.FormatFloat(parseJSONFloat(f.raw), 'g', -1, 64)
	case t == "double":
		return t + " " + strconv.FormatFloat(f.v.Double(), 'g', -1, 64)
	case t == "string":
		if s, _ := f.str(); len(s) <= 32 {
			return t + " " + strconv.Quote(s)
		}
	}
	return t
}

func isJSONNumber(text string) bool {
	c := text[0]
	return c == '-' || (c >= '0' && c <= '9')
}

// parseJSONFloat reads a JSON number the scanner accepted; one past the
// float64 range is ±Inf (what ParseFloat gives with its range error).
func parseJSONFloat(text string) float64 {
	f, _ := strconv.ParseFloat(text, 64)
	return f
}

// member is one key of a body given as JSON text, and its value.
type member struct {
	key string
	v   value
}

// body is a record's body, read once: a map, the members of a JSON object
// given as text, or nothing (no body, or a log line a bridge put there).
type body struct {
	v      pcommon.Value // the map
	m      pcommon.Map
	hasMap bool
	// text is the body's JSON text, with invalid UTF-8 replaced, and
	// members its object's members, in document order.
	text    string
	members []member
	// compact: text has no whitespace outside its strings, as a native
	// document's Record.Document must not.
	compact bool
	// err says why the body cannot be read. It is reported only when the
	// body is needed: an eval record's column-keyed body is never read.
	err error
}

// readBody reads a body: a map, or a string holding a JSON object. Other
// text is not the episode's and is ignored; text that starts like an
// object but does not parse is an error, since it was meant as the episode.
// room and ix are where its members and its index go (Arena.memberRoom,
// Arena.index); nil gives them memory of their own.
func readBody(v pcommon.Value, room []member, ix *jsonIndex) body {
	switch v.Type() {
	case pcommon.ValueTypeEmpty:
	case pcommon.ValueTypeMap:
		return body{v: v, m: v.Map(), hasMap: true}
	case pcommon.ValueTypeStr:
		s := v.Str()
		if firstNonSpace(s) != '{' {
			break
		}
		b, err := objectBody(s, room, ix)
		if err == nil {
			return b
		}
		// Python's json.dumps writes NaN and ±Inf as NaN and Infinity,
		// which are not JSON. A native document is taken with them as null,
		// as the SDK would store them; a column-keyed body keeps its rules.
		if py, changed := RewriteJSON(validText(s), false, true); changed {
			if pb, err := objectBody(py, room[:0], ix); err == nil && pb.isDocument() {
				return pb
			}
		}
		return body{err: rejection(reject.BadBody, bodyField, "body looks like a JSON object but does not parse: %v", err)}
	default:
		return body{err: rejection(reject.BadBody, bodyField, "body must be a map or a string holding a JSON object, got %s", pvalue.TypeName(v))}
	}
	return body{}
}

// objectBody reads the JSON text of an object into its members, written
// over room; a nil room or ix is memory of their own. Invalid UTF-8, which
// can only sit inside JSON strings, is replaced first, so that every span
// cut from the body is valid text; the index's pass tells whether the
// text has any byte that could be part of it, which chat text seldom has.
// Text the index refuses is read by the scanner, whose error names where
// it goes wrong.
func objectBody(s string, room []member, ix *jsonIndex) (body, error) {
	if room == nil {
		room = make([]member, 0, 16)
	}
	if ix == nil {
		ix = new(jsonIndex)
	}
	compact, ascii, ok := ix.build(s)
	if !ascii {
		if valid := validText(s); len(valid) != len(s) || valid != s {
			s = valid
			compact, _, ok = ix.build(s)
		}
	}
	b := body{text: s, members: room[:0], compact: compact}
	if !ok || len(ix.entries) == 0 || s[ix.entries[0].start] != '{' {
		var err error
		b.compact, err = scanMembers(s, func(k, v string) error {
			b.members = append(b.members, member{unquote(k), value{raw: v}})
			return nil
		})
		return b, err
	}
	err := ix.members(0, func(k string, v value) error {
		b.members = append(b.members, member{unquote(k), v})
		return nil
	})
	return b, err
}

// source finds a record's columns: attribute first, then body key.
type source struct {
	attrs pcommon.Map
	// columnAttrs: some attribute is a prime.episode.<column>. Most
	// records have none, and one look at the attributes spares every
	// column its lookup by a concatenated key.
	columnAttrs bool
	body
	// keyed is a map body's value of each column it names (bodyColumn),
	// found in one pass over its keys: a lookup a column scanned every
	// key, a column the body does not have (info, token counts) all of
	// them, about 15 % of a 2 KB record's mapping. has marks the columns
	// found; the first of duplicate keys is kept, as pcommon.Map.Get finds.
	keyed [numBodyColumns]pcommon.Value
	has   uint32
	// memberAt is, for a JSON body, one past the index in members of the
	// last member of each column it names (bodyColumn), zero for none:
	// found in the same one pass, where a lookup compared a column with
	// every member, a tenth of mapping a 2 KB verifiers record.
	memberAt [numBodyColumns]int32
}

// The columns a map body is indexed by (source.keyed).
const (
	bcTag = iota
	bcProblemID
	bcPrompt
	bcAnswer
	bcEnvName
	bcReward
	bcAdvantage
	bcNumInputTokens
	bcNumOutputTokens
	bcTrajectory
	bcCompletion
	bcTask
	bcInfo
	bcMetrics
	bcTiming
	numBodyColumns
)

// bodyColumn is column's index in source.keyed, or -1.
func bodyColumn(column string) int {
	switch column {
	case colTag:
		return bcTag
	case colProblemID:
		return bcProblemID
	case colPrompt:
		return bcPrompt
	case colAnswer:
		return bcAnswer
	case colEnvName:
		return bcEnvName
	case colReward:
		return bcReward
	case colAdvantage:
		return bcAdvantage
	case colNumInputTokens:
		return bcNumInputTokens
	case colNumOutputTokens:
		return bcNumOutputTokens
	case colTrajectory:
		return bcTrajectory
	case colCompletion:
		return bcCompletion
	case colTask:
		return bcTask
	case colInfo:
		return bcInfo
	case colMetrics:
		return bcMetrics
	case colTiming:
		return bcTiming
	}
	return -1
}

// newSource is the column-keyed reading of a record.
func newSource(attrs pcommon.Map, b body) (source, error) {
	if b.err != nil {
		return source{}, b.err
	}
	s := source{attrs: attrs, body: b}
	for k := range attrs.All() {
		if strings.HasPrefix(k, attrPrefix) {
			s.columnAttrs = true
			break
		}
	}
	if s.hasMap {
		for k, v := range s.m.All() {
			if i := bodyColumn(k); i >= 0 && s.has&(1<<i) == 0 {
				s.keyed[i] = v
				s.has |= 1 << i
			}
		}
	}
	for j, m := range s.members {
		if i := bodyColumn(m.key); i >= 0 {
			s.memberAt[i] = int32(j + 1) // the last of duplicate keys wins
		}
	}
	return s, nil
}

// get finds column's value; a null or empty value is no value, so an empty
// attribute leaves the column to the body.
func (s *source) get(column string) (field, bool) {
	if s.columnAttrs {
		if v, ok := s.attrs.Get(attrPrefix + column); ok && v.Type() != pcommon.ValueTypeEmpty {
			return field{column: column, fromAttr: true, value: value{v: v}}, true
		}
	}
	bc := bodyColumn(column)
	if s.hasMap {
		v, ok := pcommon.Value{}, false
		if bc >= 0 {
			v, ok = s.keyed[bc], s.has&(1<<bc) != 0
		} else {
			v, ok = s.m.Get(column)
		}
		if ok && v.Type() != pcommon.ValueTypeEmpty {
			return field{column: column, value: value{v: v}}, true
		}
	}
	if bc >= 0 {
		if at := s.memberAt[bc]; at > 0 {
			return jsonField(column, s.members[at-1].v)
		}
		return field{}, false
	}
	// The last of duplicate keys wins, as with encoding/json.
	for i := len(s.members) - 1; i >= 0; i-- {
		if s.members[i].key == column {
			return jsonField(column, s.members[i].v)
		}
	}
	return field{}, false
}

// jsonField is the field of a JSON value's text; null is no value.
func jsonField(column string, v value) (field, bool) {
	if v.raw == "null" {
		return field{}, false
	}
	return field{column: column, value: v}, true
}
