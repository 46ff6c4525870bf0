package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
)

// prose is exactly n bytes of filler written as a model writes: words in
// sentences (a capital, a full stop), now and then a paragraph break. The
// breaks and the odd quote matter to the exporter's cost as much as the
// words: JSON escapes them, and every copy of a message is escaped again.
func prose(r *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n)
	z := rand.NewZipf(r, 1.1, 1, uint64(len(vocabulary)-1))
	start := true
	for b.Len() < n {
		w := vocabulary[z.Uint64()]
		switch {
		case start:
			w = strings.ToUpper(w[:1]) + w[1:]
		case r.IntN(40) == 0:
			w = `"` + w + `"`
		}
		switch {
		case b.Len() == 0:
		case start && r.IntN(6) == 0:
			w = "\n\n" + w
		default:
			w = " " + w
		}
		start = r.IntN(12) == 0
		if start {
			w += "."
		}
		if room := n - b.Len(); len(w) > room {
			b.WriteString(strings.Repeat(".", room))
			break
		}
		b.WriteString(w)
	}
	return b.String()
}

// code is exactly n bytes of Python-like lines, as a model's tool call
// carries: names, quotes and newlines, which a tool call's arguments escape
// once and the message holding them twice.
func code(r *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n)
	for b.Len() < n {
		x, y := vocabulary[r.IntN(200)], vocabulary[r.IntN(2000)]
		line := x + "_" + y + ` = compute("` + y + `", ` + string(rune('1'+r.IntN(9))) + ")\n"
		if b.Len()+len(line) > n {
			b.WriteString(strings.Repeat("#", n-b.Len()))
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// jsonText is v as compact JSON the way prime-otel makes it (Python's
// json.dumps with separators (",", ":")): no HTML escaping of <, > and &.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only the bench's own types reach this, and they all encode.
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
