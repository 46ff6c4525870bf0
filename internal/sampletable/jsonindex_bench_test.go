package sampletable

import (
	"strings"
	"testing"
)

// BenchmarkCheckBody is a body's one checking pass on the verifiers,
// native and tokens shapes (shapes_test.go), as the scanner makes it
// (scanMembers) and as the index does (build), per body.
//
//	go test -run '^$' -bench 'CheckBody' -count 6 ./internal/sampletable
func BenchmarkCheckBody(b *testing.B) {
	for _, s := range verifiersShapes(b) {
		if strings.HasPrefix(s.name, "verifiers-map") {
			continue
		}
		bodies, _, textBytes := s.records(b)
		texts := make([]string, len(bodies))
		for i, body := range bodies {
			texts[i] = body.Str()
		}
		b.Run(s.name+"/scanner", func(b *testing.B) {
			b.SetBytes(int64(textBytes / len(texts)))
			i := 0
			for b.Loop() {
				if _, err := scanMembers(texts[i%len(texts)], func(string, string) error { return nil }); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(s.name+"/index", func(b *testing.B) {
			b.SetBytes(int64(textBytes / len(texts)))
			var ix jsonIndex
			i := 0
			for b.Loop() {
				if _, _, ok := ix.build(texts[i%len(texts)]); !ok {
					b.Fatal("not JSON")
				}
				i++
			}
		})
	}
}
