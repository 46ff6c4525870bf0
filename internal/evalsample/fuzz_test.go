package evalsample

import (
	"encoding/json"
	"errors"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/rft"
)

// Whatever text a record's body holds, FromRecord gives samples the
// evaluations API can take, or a rejection; and the summary it feeds
// always saves and renders as JSON.
func FuzzFromRecordGivesSamplesTheAPICanTake(f *testing.F) {
	f.Add(fixtureText(f))
	f.Add(`{"sample_id":"s","reward":NaN,"metrics":{"a":1e400},"error":null}`)
	f.Add(doc(1, trace(1, true, `"rewards":{"a":{"score":null},"reward":{"score":1}},"calls":[{"usage":{"prompt_tokens":1,"completion_tokens":2,"cost":0.5}}]`)))
	f.Add(doc(2, trace(2, false, `"tools":[{"name":"t"}],"errors":[{"type":"E"}],"stop_condition":"max_turns"`), trace(2, true, "")))
	f.Add(`{"traces":[{"nodes":[{"parent":0,"message":{}}]}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		res, err := FromRecord(pcommon.NewValueStr(text), NewCounters(4))
		if err != nil {
			if _, ok := errors.AsType[*reject.Rejection](err); !ok {
				t.Fatalf("an error that is not a rejection: %v", err)
			}
			return
		}
		_, tooLarge, invalid := rft.SampleBatches(res.Samples)
		if len(tooLarge) > 0 || len(invalid) > 0 {
			t.Fatalf("samples the API cannot take: too large %v, invalid %v: %s", tooLarge, invalid, res.Samples)
		}
		s := NewSummary()
		s.AddEpisode(res.Episode)
		saved, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("the summary does not save: %v", err)
		}
		if err := json.Unmarshal(saved, NewSummary()); err != nil {
			t.Fatalf("the summary does not restore: %v", err)
		}
		if _, err := json.Marshal(s.Render()); err != nil {
			t.Fatalf("the summary does not render as JSON: %v", err)
		}
	})
}
