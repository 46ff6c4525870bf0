package stepmetrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// bodyKey names the record body in rejections.
const bodyKey = "body"

// FromEvent maps one prime.metrics log record (telemetry.md §3) to entries
// of its row. Attribute prime.step (an int, an integral double, or a string
// holding a decimal integer) gives the step; an event with no prime.step at
// all is time-keyed instead, its entries the row of its time (EventTime),
// and only an event with no time either is rejected (no_step). A prime.step
// that is there but bad is bad_step: a step is never guessed, nor dropped
// for the time. The values are
//   - the body, when it is a non-empty map of name → number or a string
//     holding such a JSON object (attributes then only carry the step);
//   - otherwise every attribute but the event's own control attributes
//     (event.name and everything under prime.) and the provenance
//     attributes that OTel log bridges add by themselves (code.*, thread.*,
//     exception.*, log.record.*, log.file.* and friends; see bridgeAttribute).
//
// Each value is read leniently (an int is a number, a string holding a
// decimal number is that number, a bool is 1 or 0; see readValue). A value
// that is none of these is a bad_value rejection of its own; the event's
// other values still count. Keys are taken as given, with no attribute
// folding: an event has no data-point attributes. A rejection's Field is the
// key, attribute or "body" concerned. Every entry's Time is EventTime.
//
// coerced holds one reason per value that became an entry only by coercion,
// in value order, then one for a string step if the event gave any entry,
// for the caller to count.
func FromEvent(lr plog.LogRecord) (entries []Entry, rejected []*reject.Rejection, coerced []reject.Reason) {
	attrs, at := lr.Attributes(), EventTime(lr)
	sv, ok := attrs.Get(stepAttribute)
	if !ok {
		if at == 0 {
			return nil, []*reject.Rejection{reject.New(reject.NoStep, stepAttribute, "prime.metrics event has neither a %s attribute nor a timestamp", stepAttribute)}, nil
		}
		return eventValues(attrs, lr.Body(), rowEntry(Row{Time: at}, at), "prime.metrics event at "+at.AsTime().UTC().Format(time.RFC3339Nano))
	}
	step, stepHow, ok := readStep(sv)
	if !ok {
		return nil, []*reject.Rejection{reject.New(reject.BadStep, stepAttribute, "prime.metrics event: attribute %s must be an int, got %s", stepAttribute, describe(sv))}, nil
	}

	entries, rejected, coerced = eventValues(attrs, lr.Body(), rowEntry(Row{Step: step}, at), fmt.Sprintf("prime.metrics event for step %d", step))
	// Like a point's, the step counts as coerced only when it delivered
	// something; an event rejected whole is counted as rejected alone.
	if stepHow != "" && len(entries) > 0 {
		coerced = append(coerced, stepHow)
	}
	return entries, rejected, coerced
}

// EventTime is when a record happened: its timestamp, else the time the
// SDK or collector observed it (a logging bridge may leave the first
// unset), else 0, unknown.
func EventTime(lr plog.LogRecord) pcommon.Timestamp {
	if t := lr.Timestamp(); t != 0 {
		return t
	}
	return lr.ObservedTimestamp()
}

// SummaryValues maps one prime.metrics record of an evaluation, which has
// no steps: its values as FromEvent reads them, every entry of step 0. A
// prime.step attribute, if any, is a control attribute and ignored.
func SummaryValues(attrs pcommon.Map, body pcommon.Value) (entries []Entry, rejected []*reject.Rejection, coerced []reject.Reason) {
	return eventValues(attrs, body, Entry{}, "prime.metrics event")
}

// eventValues reads an event's values (see FromEvent) as copies of base,
// each with its key and value.
func eventValues(attrs pcommon.Map, body pcommon.Value, base Entry, subject string) (entries []Entry, rejected []*reject.Rejection, coerced []reject.Reason) {
	values, fromBody, bodyErr := bodyValues(body)
	if bodyErr != nil {
		rejected = append(rejected, reject.New(reject.BadValue, bodyKey, "prime.metrics event: body looks like a JSON object but does not parse: %v", bodyErr))
	}
	if !fromBody {
		values = attrs
	}
	candidates := 0
	values.Range(func(k string, v pcommon.Value) bool {
		if controlKey(k) || (!fromBody && bridgeAttribute(k)) {
			return true
		}
		candidates++
		f, how, ok := readValue(v)
		switch {
		case !ok:
			rejected = append(rejected, reject.New(reject.BadValue, k, "prime.metrics event: value of %q must be a number, got %s", k, pvalue.TypeName(v)))
		case math.IsNaN(f) || math.IsInf(f, 0):
			rejected = append(rejected, nonFinite(k, f))
		default:
			e := base
			e.Key, e.Value = k, f
			entries = append(entries, e)
			if how != "" {
				coerced = append(coerced, how)
			}
		}
		return true
	})
	if candidates == 0 && len(rejected) == 0 {
		rejected = append(rejected, reject.New(reject.NoValues, "prime.metrics", "%s carries no values", subject))
	}
	return entries, rejected, coerced
}

// bodyValues reads the body as the event's values: a map, or a string whose
// first non-space character is `{` parsed as a JSON object. An empty map, or
// any other body (a message text, say), leaves the values to the attributes.
func bodyValues(body pcommon.Value) (pcommon.Map, bool, error) {
	switch body.Type() {
	case pcommon.ValueTypeMap:
		return body.Map(), body.Map().Len() > 0, nil
	case pcommon.ValueTypeStr:
		s := strings.TrimSpace(body.Str())
		if !strings.HasPrefix(s, "{") {
			return pcommon.Map{}, false, nil
		}
		m, err := parseJSONObject(s)
		if err != nil {
			return pcommon.Map{}, false, err
		}
		return m, m.Len() > 0, nil
	}
	return pcommon.Map{}, false, nil
}

// parseJSONObject parses s into a map in document order, so the entries
// come out in the order the trainer wrote them.
func parseJSONObject(s string) (pcommon.Map, error) {
	// A whole-document check first: its errors read better than the
	// streaming decoder's ("unexpected end of JSON input", not "EOF").
	if !json.Valid([]byte(s)) {
		var probe any
		if err := json.Unmarshal([]byte(s), &probe); err != nil {
			return pcommon.Map{}, err
		}
		return pcommon.Map{}, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return pcommon.Map{}, errors.New("not a JSON object")
	}
	m := pcommon.NewMap()
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return pcommon.Map{}, err
		}
		key, ok := tok.(string)
		if !ok {
			return pcommon.Map{}, errors.New("object key is not a string")
		}
		var raw any
		if err := dec.Decode(&raw); err != nil {
			return pcommon.Map{}, err
		}
		if err := m.PutEmpty(key).FromRaw(raw); err != nil {
			return pcommon.Map{}, err
		}
	}
	_, err := dec.Token() // the closing brace; json.Valid ruled out trailing data
	return m, err
}

// controlKey tells the event's own control keys, which are not metrics:
// event.name (the event-name attribute of older SDKs) and the prime.
// namespace, which the exporter reserves for what it reads (prime.step).
func controlKey(k string) bool {
	return k == "event.name" || strings.HasPrefix(k, "prime.")
}

// bridgeAttribute tells the attributes that OTel log bridges (Python's
// LoggingHandler, logging instrumentation, Java's appenders) put on every
// record by themselves. They are provenance, not metrics: code.lineno and
// thread.id are ints and would otherwise be plotted. Exact names only, so a
// trainer's own "code.pass_rate" is still a metric.
func bridgeAttribute(k string) bool {
	switch k {
	case "code.filepath", "code.file.path", "code.function", "code.function.name",
		"code.lineno", "code.line.number", "code.column", "code.column.number",
		"code.namespace", "code.stacktrace",
		"thread.id", "thread.name",
		"exception.type", "exception.message", "exception.stacktrace", "exception.escaped",
		"log.record.uid", "log.record.original", "log.iostream",
		"log.file.name", "log.file.path", "log.file.name_resolved", "log.file.path_resolved",
		"otelSpanID", "otelTraceID", "otelTraceSampled", "otelServiceName":
		return true
	}
	return false
}
