package evalsample

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/testkit/pdatajson"

	"github.com/primeintellect/primeexporter/internal/reject"
)

// fixtureText is testdata/verifiers-episode/episode.json, as its README
// describes it.
func fixtureText(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile("testdata/verifiers-episode/episode.json")
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// compact is s without its whitespace, by encoding/json.
func compact(tb testing.TB, s string) string {
	tb.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		tb.Fatal(err)
	}
	return buf.String()
}

// jsonValue builds a pdata value from JSON text, keeping the text's key
// order and its ints as ints, as an OTel SDK's map body has them.
func jsonValue(tb testing.TB, s string) pcommon.Value {
	tb.Helper()
	v, err := pdatajson.Decode(s)
	if err != nil {
		tb.Fatalf("test JSON: %v", err)
	}
	return v
}

// decoded is JSON text decoded, so that values compare as the platform
// reads them (2.0 and 2 are one number).
func decoded(tb testing.TB, text []byte) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(text, &v); err != nil {
		tb.Fatalf("not JSON: %v\n%s", err, text)
	}
	return v
}

// field is one key of a sample, as JSON text.
func field(tb testing.TB, sample json.RawMessage, key string) string {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(sample, &m); err != nil {
		tb.Fatalf("sample is not a JSON object: %v\n%s", err, sample)
	}
	v, ok := m[key]
	if !ok {
		tb.Fatalf("sample has no %s: %s", key, sample)
	}
	return string(v)
}

// wantRejection fails unless err is a *reject.Rejection of reason and
// field whose message says what.
func wantRejection(tb testing.TB, err error, reason reject.Reason, field, what string) {
	tb.Helper()
	rej, ok := errors.AsType[*reject.Rejection](err)
	if !ok || rej.Reason != reason || rej.Field != field || !strings.Contains(err.Error(), what) {
		tb.Fatalf("got %v, want a %s rejection of %s saying %q", err, reason, field, what)
	}
}

// doc is a native document of task idx with the traces (JSON text).
func doc(idx int, traces ...string) string {
	return `{"id":"ep-` + itoa(idx) + `","env":{"id":"env-a"},"task":{"type":"T","data":{"idx":` + itoa(idx) + `}},` +
		`"run":{"type":"eval","id":"e-1"},"ok":true,"errors":[],"traces":[` + strings.Join(traces, ",") + `]}`
}

// trace is a trace of task idx: trainable or not, with members (JSON text
// of "key":value pairs) after its one branch.
func trace(idx int, trainable bool, members string) string {
	t := `{"id":"t-` + itoa(idx) + `","task":{"type":"T","data":{"idx":` + itoa(idx) + `}},` +
		`"agent":{"name":"solver","trainable":` + map[bool]string{true: "true", false: "false"}[trainable] + `},` +
		`"nodes":[{"message":{"role":"user","content":"q"}},{"parent":0,"message":{"role":"assistant","content":"a"}}]`
	if members != "" {
		t += "," + members
	}
	return t + "}"
}

func itoa(i int) string { return strconv.Itoa(i) }
