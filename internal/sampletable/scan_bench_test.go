package sampletable

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
)

// This file is the evidence for the in-place JSON scanner (jsonscan.go):
// it reads a body given as JSON text both with the scanner and with the
// straightforward encoding/json reading that would replace it, checks that
// the two agree, and times them.

// bodyText is what FromRecord takes from a body given as JSON text: every
// column's value text, and the trajectory re-serialised with the episode's
// advantage along with its last branch's token counts and messages text.
type bodyText struct {
	columns    []string // in bodyColumns order; "" when absent or null
	trajectory string
	tail       [3]string // the last branch's num_input_tokens, num_output_tokens, messages
}

// bodyColumns are the columns a body can give.
func bodyColumns() []string {
	return []string{colTag, colProblemID, colPrompt, colCompletion, colAnswer, colEnvName, colTask,
		colInfo, colReward, colAdvantage, colMetrics, colTiming, colNumInputTokens, colNumOutputTokens}
}

// scannedBodyText reads body with the scanner, through FromRecord's own
// functions.
func scannedBodyText(attrs pcommon.Map, body pcommon.Value, advantage *float64) (bodyText, error) {
	src, err := newSource(attrs, readBody(body, nil, nil))
	if err != nil {
		return bodyText{}, err
	}
	var out bodyText
	for _, c := range bodyColumns() {
		f, _ := src.get(c)
		out.columns = append(out.columns, f.raw)
	}
	traj, _ := src.get(colTrajectory)
	t, err := buildTrajectory(nil, traj, advantage)
	if err != nil {
		return bodyText{}, err
	}
	out.trajectory = t.text
	out.tail = [3]string{t.last.in.raw, t.last.out.raw, t.last.messages.raw}
	return out, nil
}

// decodedBodyText reads body with encoding/json: the body into a map of raw
// values (the last of duplicate keys wins, as with the scanner), and the
// trajectory token by token, since its branches must keep their key order.
func decodedBodyText(body string, advantage *float64) (bodyText, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal([]byte(strings.ToValidUTF8(body, "\uFFFD")), &members); err != nil {
		return bodyText{}, err
	}
	var out bodyText
	for _, c := range bodyColumns() {
		out.columns = append(out.columns, nonNull(members[c]))
	}
	adv := []byte("null")
	if advantage != nil {
		adv = pjson.AppendFloat(nil, *advantage)
	}
	var err error
	out.trajectory, out.tail, err = decodedTrajectory(members[colTrajectory], adv)
	return out, err
}

func nonNull(raw json.RawMessage) string {
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}

func decodedTrajectory(raw json.RawMessage, adv []byte) (string, [3]string, error) {
	var tail [3]string
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return "", tail, errors.New("not an array")
	}
	var sb pjson.Buffer
	sb.Grow(len(raw) + 64)
	sb.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return "", tail, errors.New("not a branch")
		}
		if i > 0 {
			sb.WriteByte(',')
		}
		tail = [3]string{}
		sb.WriteByte('{')
		n, seen := 0, false
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return "", tail, err
			}
			key := tok.(string)
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return "", tail, err
			}
			switch key {
			case branchAdvantage:
				if seen {
					continue
				}
				seen, v = true, adv
			case colNumInputTokens:
				tail[0] = nonNull(v)
			case colNumOutputTokens:
				tail[1] = nonNull(v)
			case branchMessages:
				tail[2] = nonNull(v)
			}
			if n > 0 {
				sb.WriteByte(',')
			}
			n++
			pjson.WriteString(&sb, key)
			sb.WriteByte(':')
			sb.Write(v)
		}
		if _, err := dec.Token(); err != nil {
			return "", tail, err
		}
		endBranch(&sb, n, seen, string(adv))
	}
	if _, err := dec.Token(); err != nil {
		return "", tail, err
	}
	sb.WriteByte(']')
	return sb.String(), tail, nil
}

// The benchmark compares like with like: both readings give the same text
// for its bodies, compact or indented as json.dumps(indent=1) writes them.
func TestTheScannerAndEncodingJSONReadABodyToTheSameText(t *testing.T) {
	type body struct{ name, text string }
	bodies := []body{{"the test episode", episodeJSON}}
	for _, s := range benchShapes() {
		vs, _, _ := benchRecords(s, true)
		bodies = append(bodies, body{"the " + s.name + " benchmark body", vs[0].Str()})
	}
	for _, b := range bodies {
		var indented bytes.Buffer
		if err := json.Indent(&indented, []byte(b.text), "", " "); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body{b.name + ", indented", indented.String()})
	}
	for _, b := range bodies {
		t.Run(b.name, func(t *testing.T) {
			for _, adv := range []*float64{nil, ptr(-0.25)} {
				scanned, err := scannedBodyText(pcommon.NewMap(), pcommon.NewValueStr(b.text), adv)
				if err != nil {
					t.Fatal(err)
				}
				decoded, err := decodedBodyText(b.text, adv)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Join(scanned.columns, "\x00") != strings.Join(decoded.columns, "\x00") ||
					scanned.trajectory != decoded.trajectory || scanned.tail != decoded.tail {
					t.Fatalf("the scanner read\n%+v\nencoding/json\n%+v", scanned, decoded)
				}
			}
		})
	}
}

// BenchmarkBodyText times reading one episode body given as JSON text (a
// single-turn ~2 KB one and an agentic ~200 KB one) with the scanner and
// with encoding/json. MB/s counts the body's bytes.
func BenchmarkBodyText(b *testing.B) {
	adv := ptr(0.5)
	for _, s := range benchShapes() {
		bodies, _, _ := benchRecords(s, true)
		body := bodies[0]
		attrs := pcommon.NewMap()
		b.Run(s.name+"/scanner", func(b *testing.B) {
			b.SetBytes(int64(len(body.Str())))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := scannedBodyText(attrs, body, adv); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(body.Str())))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodedBodyText(body.Str(), adv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
