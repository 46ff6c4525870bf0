package pjson

import (
	"fmt"
	"strings"
	"testing"
)

// chatText is n bytes of chat-like text: words, punctuation, a newline
// now and then and a quote, so that the scan stops as it does on real
// turns.
func chatText(n int, plain bool) string {
	words := []string{"the", "model", "answers", "with", "a", "step-by-step", "proof,", "then", "checks", "it."}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		switch {
		case i%97 == 96 && !plain:
			b.WriteString("\n")
		case i%211 == 210 && !plain:
			b.WriteString(`"quoted" `)
		default:
			b.WriteString(words[i%len(words)] + " ")
		}
	}
	return b.String()[:n]
}

// BenchmarkWriteString is the escape scan and copy that writing a
// trajectory spends its time in, at a 2 KB turn and a 200 KB one.
func BenchmarkWriteString(b *testing.B) {
	for _, c := range []struct {
		n     int
		plain bool
	}{{2 << 10, false}, {200 << 10, false}, {200 << 10, true}} {
		n, s := c.n, chatText(c.n, c.plain)
		b.Run(fmt.Sprint(n>>10, "KB", map[bool]string{true: "/plain", false: "/chat"}[c.plain]), func(b *testing.B) {
			mem := make([]byte, 0, 2*n)
			b.SetBytes(int64(n))
			for b.Loop() {
				buf := NewBuffer(mem)
				WriteString(&buf, s)
			}
		})
	}
}

// BenchmarkIndexSpecial is what a scanner of JSON text does over a
// string's bytes: find each quote, backslash or control character in
// turn, here over chat text as a JSON document holds it (its newlines
// escaped, a backslash every few dozen bytes).
func BenchmarkIndexSpecial(b *testing.B) {
	for _, n := range []int{2 << 10, 200 << 10} {
		var sb Buffer
		WriteString(&sb, chatText(n, false))
		s := sb.String()
		b.Run(fmt.Sprint(n>>10, "KB"), func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				for i := 1; i < len(s); i++ {
					k := IndexSpecial(s[i:])
					if k < 0 {
						break
					}
					i += k
				}
			}
		})
	}
}

// BenchmarkIndexSpecialShortStrings is a scanner reading a document of
// short strings (keys, roles, ids): one search from each string's start,
// through the rest of the document, ending a few bytes on.
func BenchmarkIndexSpecialShortStrings(b *testing.B) {
	s := strings.Repeat(`{"parent":3,"message":{"role":"assistant","content":"42"},"sampled":true,"id":"call_0f3a9c"},`, 64)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		for i := 0; i < len(s); i++ {
			if s[i] != '"' {
				continue
			}
			i += 1 + IndexSpecial(s[i+1:])
		}
	}
}
