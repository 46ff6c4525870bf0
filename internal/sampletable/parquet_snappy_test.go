package sampletable

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/golang/snappy"
)

// A page compressed in pieces is one block that the reference Snappy
// decoder (golang/snappy, not the s2 package that wrote it) reads back as
// the body, whatever the mix of gathered and big values.
func TestAPageCompressedInPiecesDecodesAsItsWholeBody(t *testing.T) {
	word := func(n int) string { return strings.Repeat("chat turn ", n/10+1)[:n] }
	for _, c := range []struct {
		name   string
		values []string
	}{
		{"small values only", []string{"a", word(100), word(5000)}},
		{"one big value", []string{word(bigValue)}},
		{"a value one byte short of big", []string{word(bigValue - 1), "x"}},
		{"big values between small ones", []string{"x", word(bigValue + 7), word(300), word(3 * bigValue), "", word(bigValue)}},
		{"big values side by side", []string{word(bigValue), word(2 * bigValue)}},
		// A block's uvarint grows from 3 to 4 bytes past 2 MiB: the piece's
		// header is shorter than the page's.
		{"a page past 2 MiB", []string{word(3 << 20), word(bigValue)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var want []byte
			for _, v := range c.values {
				want = append(want, v...)
			}
			var p snappyPage
			levels := []byte{1, 2, 3}
			p.begin(append([]byte(nil), levels...), nil, len(levels)+len(want))
			for _, v := range c.values {
				p.value(v)
			}
			block := p.finish()
			got, err := snappy.Decode(nil, block)
			if err != nil {
				t.Fatalf("golang/snappy cannot decode the page: %v", err)
			}
			if want = append(levels, want...); !bytes.Equal(got, want) {
				t.Fatalf("decoded %d bytes (%.40q...), want %d (%.40q...)", len(got), got, len(want), want)
			}
		})
	}
}

// Compressing a big value on its own still compresses it: a repetitive
// text of several pages takes a small share of its length.
func TestABigValueIsCompressedNotStored(t *testing.T) {
	text := strings.Repeat("the same sentence of a long chat, ", (4*bigValue)/34)
	var p snappyPage
	p.begin(nil, nil, len(text))
	p.value(text)
	if got := len(p.finish()); got > len(text)/10 {
		t.Fatalf("a %d-byte repetitive value compressed to %d bytes, more than a tenth", len(text), got)
	}
}

// The page's block reuses the memory it is given and keeps no value.
func TestAPageReusesItsBuffersAcrossPages(t *testing.T) {
	var p snappyPage
	p.begin(nil, nil, 2*bigValue)
	p.value(strings.Repeat("y", 2*bigValue))
	comp := p.finish()
	for i := range 3 {
		p.begin(p.buf[:0], comp, 10+bigValue)
		p.value(fmt.Sprintf("%010d", i))
		p.value(strings.Repeat("z", bigValue))
		if got := p.finish(); &got[0] != &comp[0] {
			t.Fatalf("page %d: the block moved to new memory", i)
		}
	}
}
