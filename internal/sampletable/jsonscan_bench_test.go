package sampletable

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// tokenArrays is a node's token arrays as verifiers records them and
// Python's json.dumps writes them: ids, a mask, logprobs in repr form and
// advantages, n tokens each.
func tokenArrays(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	list := func(key string, elem func() string) {
		b.WriteString(`"` + key + `":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(elem())
		}
		b.WriteString("]")
	}
	b.WriteByte('{')
	list("token_ids", func() string { return strconv.Itoa(r.IntN(151_000)) })
	b.WriteByte(',')
	list("mask", func() string { return strconv.FormatBool(r.IntN(2) == 0) })
	b.WriteByte(',')
	list("logprobs", func() string { return strconv.FormatFloat(-r.ExpFloat64(), 'g', -1, 64) })
	b.WriteByte(',')
	list("advantages", func() string { return "0.5" })
	b.WriteByte('}')
	return b.String()
}

// BenchmarkScanTokenArrays is the body's one checking scan (scanValue, as
// Value) and a later walk's skipValue (as Skip) over token arrays, most of
// a native document's bytes when it carries them.
func BenchmarkScanTokenArrays(b *testing.B) {
	for _, n := range []int{64, 4096} {
		s := tokenArrays(n)
		b.Run(fmt.Sprint("Value/", n), func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if _, ok := scanValue(s, 0, 0); !ok {
					b.Fatal("not JSON")
				}
			}
		})
		b.Run(fmt.Sprint("Skip/", n), func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				if skipValue(s, 0) != len(s) {
					b.Fatal("short")
				}
			}
		})
	}
}
