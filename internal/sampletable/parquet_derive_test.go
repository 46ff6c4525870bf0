package sampletable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/s2"
)

// chat is n bytes of words drawn with Zipf's law, compressing about as
// chat text does (seeded, so every run sees the same text).
func chat(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	words := make([]string, 2000)
	for i := range words {
		w := make([]byte, 1+r.IntN(8))
		for j := range w {
			w[j] = "etaoinshrdlcumwfgypbvkjxqz"[min(25, int(r.ExpFloat64()*5))]
		}
		words[i] = string(w)
	}
	z := rand.NewZipf(r, 1.1, 1, uint64(len(words)-1))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[z.Uint64()])
		b.WriteByte(" \n\"."[r.IntN(4)])
	}
	return b.String()[:n]
}

// trajectoryLike is a big cell shaped as the sample table's trajectory: a
// first branch, then a last branch repeating all of it before a tail of
// its own, and where the last branch's messages (the completion) lie.
func trajectoryLike(seed uint64, n int) (traj string, lo, hi int) {
	first := `{"role":"system","content":"` + chat(seed, 300) + `"},{"role":"user","content":"` + chat(seed+1, n/4) + `"},{"role":"assistant","content":"` + chat(seed+2, n*3/4) + `"}`
	tail := `,{"role":"user","content":"Tool result: 42"},{"role":"assistant","content":"` + chat(seed+3, 200) + `"}`
	head := `[{"messages":[` + first + `]},{"messages":[`
	traj = head + first + tail + `]}]`
	return traj, len(head), len(head) + len(first) + len(tail)
}

// derived compresses src with s2, as the parquetWriter does a big cell, and
// derives the block of src[lo:hi] from its elements, with no bound on the
// bytes of copies that become literals.
func derived(t *testing.T, src string, lo, hi int) []byte {
	t.Helper()
	out, ok := deriveWithin(t, src, lo, hi, hi-lo)
	if !ok {
		t.Fatalf("s2's own block of %d bytes is refused", len(src))
	}
	return out
}

// deriveWithin is derived with the parquetWriter's bound on literals, or
// another.
func deriveWithin(t *testing.T, src string, lo, hi, budget int) ([]byte, bool) {
	t.Helper()
	block := s2.EncodeSnappy(nil, []byte(src))
	_, hn := binary.Uvarint(block)
	sizes := newElemSizes()
	cps, ok := sizes.scan(nil, block[hn:], len(src))
	if !ok {
		t.Fatalf("s2's own block of %d bytes does not scan", len(src))
	}
	return sizes.appendDerived(binary.AppendUvarint(nil, uint64(hi-lo)), src, block[hn:], cps, lo, hi, budget)
}

// The reference decoder (golang/snappy) reads a derived stretch back as
// exactly those bytes of the big cell, wherever the stretch lies: the
// completion inside a trajectory, its head or tail alone, stretches that
// start or end inside a long repeat, the whole cell, one byte, and text
// whose copies overlap themselves.
func TestDerivedElementsDecodeToTheirStretchOfTheBigCell(t *testing.T) {
	traj, lo, hi := trajectoryLike(1, 90_000)
	runLength := strings.Repeat("a", 70_000) + chat(9, 5000) + strings.Repeat("ab", 20_000)
	cases := []struct {
		name   string
		src    string
		lo, hi int
	}{
		{"the last branch's messages", traj, lo, hi},
		{"the whole cell", traj, 0, len(traj)},
		{"the first branch alone", traj, 0, lo},
		{"from inside the repeat to the end", traj, lo + 10_000, len(traj)},
		{"inside the repeat only", traj, lo + 5, lo + 40_000},
		{"the tail past the repeat", traj, hi - 300, hi},
		{"one byte", traj, lo + 77, lo + 78},
		{"copies overlapping themselves", runLength, 3, len(runLength) - 2},
		{"inside a run of one byte", runLength, 1000, 2000},
	}
	r := rand.New(rand.NewPCG(5, 5))
	for i := range 40 {
		a := r.IntN(len(traj))
		cases = append(cases, struct {
			name   string
			src    string
			lo, hi int
		}{fmt.Sprint("random stretch ", i), traj, a, a + 1 + r.IntN(len(traj)-a)})
	}
	// The first byte the stretch wants falls anywhere in the element
	// that makes it, which may start a block of elements (checkpoint).
	for _, n := range []int{20_000, 40_000, 76_000, 103_000, 139_000, 400_000} {
		traj, lo, hi := trajectoryLike(uint64(n), n)
		if n == 103_000 {
			traj, lo, hi = turnsLike(uint64(n), n)
		}
		for _, d := range []int{0, 1, 2, 3, 5, 8} {
			cases = append(cases, struct {
				name   string
				src    string
				lo, hi int
			}{fmt.Sprintf("the last branch of %d bytes, from %d on", n, d), traj, lo + d, hi})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := snappy.Decode(nil, derived(t, c.src, c.lo, c.hi))
			if err != nil {
				t.Fatalf("golang/snappy cannot decode the derived stretch: %v", err)
			}
			if want := c.src[c.lo:c.hi]; string(got) != want {
				t.Fatalf("decoded %d bytes (%.40q...), want %d (%.40q...)", len(got), got, len(want), want)
			}
		})
	}
}

// turnsLike is a trajectory whose last branch holds the first branch's
// messages and as many new ones, all of a hundred common words: the new
// messages' copies reach back into the first branch, whose bytes the last
// one repeats.
func turnsLike(seed uint64, n int) (traj string, lo, hi int) {
	msgs := func(seed uint64) string {
		var b strings.Builder
		for k := range 10 {
			fmt.Fprintf(&b, `{"role":"user","content":"%s"},`, commonWords(seed+uint64(k), n/20))
		}
		return b.String()
	}
	first := msgs(seed)
	head := `[{"messages":[` + first[:len(first)-1] + `]},{"messages":`
	last := `[` + first + msgs(seed+100)
	last = last[:len(last)-1] + `]`
	return head + last + `}]`, len(head), len(head) + len(last)
}

// Deriving the last branch's messages is about as small as compressing
// them afresh: the long repeat becomes the first branch's own elements,
// not literal bytes, and the new messages' copies of the first branch copy
// its repeat inside the stretch.
func TestADerivedCompletionIsAboutAsSmallAsOneCompressedAfresh(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape func(uint64, int) (string, int, int)
		n     int
	}{
		{"a short tail, 20 KB", trajectoryLike, 20_000},
		{"a short tail, 90 KB", trajectoryLike, 90_000},
		{"a short tail, 400 KB", trajectoryLike, 400_000},
		{"as many new messages, 100 KB", turnsLike, 100_000},
	} {
		traj, lo, hi := c.shape(uint64(c.n), c.n)
		if !worthDeriving(traj, lo, hi-lo) {
			t.Fatalf("%s: not worth deriving", c.name)
		}
		out, ok := deriveWithin(t, traj, lo, hi, (hi-lo)/literalShare)
		if !ok {
			t.Fatalf("%s: deriving gave up", c.name)
		}
		got := len(out)
		afresh := len(s2.EncodeSnappy(nil, []byte(traj[lo:hi])))
		t.Logf("%d bytes of messages: derived %d bytes, compressed afresh %d", hi-lo, got, afresh)
		if float64(got) > 1.03*float64(afresh) {
			t.Errorf("%d bytes of messages: derived %d bytes, compressed afresh %d (more than 3 %% larger)", hi-lo, got, afresh)
		}
		if got < afresh/2 {
			t.Errorf("%d bytes of messages: derived %d bytes, compressed afresh %d: suspiciously small", hi-lo, got, afresh)
		}
	}
}

// Elements that are not a whole block of the length given, or copy
// nothing or from before the block's start, are refused, not read past
// their end: the cell is then compressed afresh.
func TestElementsThatS2DoesNotWriteAreRefused(t *testing.T) {
	sizes := newElemSizes()
	src := chat(3, 10_000)
	block := s2.EncodeSnappy(nil, []byte(src))
	_, hn := binary.Uvarint(block)
	elems := block[hn:]
	for _, c := range []struct {
		name  string
		elems []byte
		n     int
	}{
		{"cut short", elems[:len(elems)/2], len(src)},
		{"one byte short", elems[:len(elems)-1], len(src)},
		{"a literal running past the end", []byte{10 << 2, 'x'}, 11},
		{"a long literal's length cut off", []byte{62 << 2, 1}, 300},
	} {
		if _, ok := sizes.scan(nil, c.elems, c.n); ok {
			t.Errorf("%s: scanned", c.name)
		}
	}
	if _, ok := sizes.scan(nil, elems, len(src)); !ok {
		t.Fatal("the whole block does not scan")
	}
	for _, c := range []struct {
		name  string
		elems []byte
	}{
		{"a copy from before the start", []byte{2 << 2, 'a', 'b', 'c', 2<<2 | 2, 10, 0}},
		{"a copy of offset zero", []byte{2 << 2, 'a', 'b', 'c', 2<<2 | 2, 0, 0}},
		{"a copy cut off", []byte{2 << 2, 'a', 'b', 'c', 2<<2 | 3, 1, 0}},
	} {
		src := "abcabc"
		cps, ok := sizes.scan(nil, c.elems, len(src))
		if !ok {
			cps = []checkpoint{{i: 0, pos: 0}}
		}
		if _, ok := sizes.appendDerived(nil, src, c.elems, cps, 1, len(src), len(src)); ok {
			t.Errorf("%s: derived", c.name)
		}
	}
}

// Literal and copy elements of every length form decode as what they say.
func TestLiteralAndCopyElementsOfEveryFormDecode(t *testing.T) {
	src := chat(4, 1<<17) + strings.Repeat("x", 1<<24+300)
	var want, block []byte
	for _, n := range []int{1, 59, 60, 61, 255, 256, 257, 65535, 65536, 65537, 1<<24 + 1} {
		want = append(want, src[:n]...)
		block = appendLiteral(block, src[:n])
	}
	for _, c := range [][2]int{{1, 1}, {3, 4}, {2047, 11}, {2048, 4}, {5, 65}, {7, 66}, {7, 67}, {7, 68}, {100, 1000}, {65535, 64}, {65536, 130}, {1 << 20, 5}} {
		offset, length := c[0], c[1]
		for range length {
			want = append(want, want[len(want)-offset])
		}
		block = appendCopy(block, offset, length)
	}
	got, err := snappy.Decode(nil, append(binary.AppendUvarint(nil, uint64(len(want))), block...))
	if err != nil {
		t.Fatalf("golang/snappy: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("decoded bytes differ from the elements' bytes")
	}
}

// commonWords is n bytes of a hundred short words drawn evenly, which
// Snappy finds copies of everywhere, the nearest not always the latest.
func commonWords(seed uint64, n int) string {
	words := strings.Fields(`the of and to a in is that for it as was with be by on not he this are or his from at which
	but have an they you were her she there been one all we their has would when if so what no out up into do can
	answer step therefore compute equation value total number let solve check result function return print def
	import class self list sum range len x y z n k i j 0 1 2 3 4 5 6 7 8 9 + - * / = ( ) { } [ ] : , .`)
	r := rand.New(rand.NewPCG(seed, 2))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// A last branch that does not repeat the first, only shares its common
// words, is compressed afresh: it is not taken as worth deriving, and
// deriving it anyway gives up once its copies from the first branch would
// turn more than its share into literals (it derived 19 % larger than it
// compresses).
func TestALastBranchThatRepeatsNothingIsNotDerived(t *testing.T) {
	branch := func(seed uint64) string {
		return `[{"role":"system","content":"` + commonWords(seed, 50_000) + `"},{"role":"user","content":"` + commonWords(seed+1, 50_000) + `"}]`
	}
	head := `[{"messages":` + branch(1) + `},{"messages":`
	last := branch(3)
	traj := head + last + `}]`
	lo, hi := len(head), len(head)+len(last)
	if worthDeriving(traj, lo, hi-lo) {
		t.Error("a last branch repeating nothing is taken as worth deriving")
	}
	if _, ok := deriveWithin(t, traj, lo, hi, (hi-lo)/literalShare); ok {
		t.Error("deriving a last branch repeating nothing did not give up")
	}
	// Without the bound it still decodes to the branch: giving up is for
	// size, not correctness.
	got, err := snappy.Decode(nil, derived(t, traj, lo, hi))
	if err != nil || string(got) != last {
		t.Fatalf("decoded %d bytes (%v), want the %d of the branch", len(got), err, len(last))
	}
}

// FuzzDerivedElementsDecodeToTheirStretch: for any text, repeated in part
// after itself as a last branch repeats the first, every stretch derived
// from s2's elements of it decodes to exactly those bytes.
func FuzzDerivedElementsDecodeToTheirStretch(f *testing.F) {
	f.Add([]byte(chat(1, 3000)), uint16(100), uint16(2000), uint16(2500), uint16(4000))
	f.Add([]byte(strings.Repeat("ab", 500)), uint16(0), uint16(1000), uint16(1), uint16(1999))
	f.Add([]byte(commonWords(2, 5000)), uint16(10), uint16(4000), uint16(4100), uint16(9000))
	f.Fuzz(func(t *testing.T, text []byte, from, to, lo, hi uint16) {
		if len(text) == 0 {
			return
		}
		a, b := int(from)%len(text), int(to)%len(text)
		if a > b {
			a, b = b, a
		}
		src := string(text) + `,{"messages":` + string(text[a:b]) + `}`
		l, h := int(lo)%len(src), int(hi)%(len(src)+1)
		if l >= h {
			return
		}
		got, err := snappy.Decode(nil, derived(t, src, l, h))
		if err != nil {
			t.Fatalf("golang/snappy cannot decode the stretch [%d, %d) of %d bytes: %v", l, h, len(src), err)
		}
		if string(got) != src[l:h] {
			t.Fatalf("the stretch [%d, %d) of %d bytes decodes to other bytes", l, h, len(src))
		}
	})
}
