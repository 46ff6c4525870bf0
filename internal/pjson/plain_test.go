package pjson

import (
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestPlainPrefixStopsAtTheFirstByteAJSONStringCannotCarryAsIs puts each
// kind of byte the scan must stop at, and each plain byte next to those
// kinds, at every position of strings from empty to four vector blocks and
// a bit: the vector scan reports the first such byte if it lies in a whole
// 32-byte block and the whole blocks otherwise, and WriteString writes what
// encoding/json does either way.
func TestPlainPrefixStopsAtTheFirstByteAJSONStringCannotCarryAsIs(t *testing.T) {
	stops := []byte{0x00, 0x0a, 0x1f, '"', '\\', 0x80, 0xc3, 0xe2, 0xff}
	plains := []byte{0x20, '!', '#', '[', ']', 0x7f}
	filler := strings.Repeat("abcdefghijklmnopqrstuvwxyz 0123456789.", 5)
	for n := 0; n <= 140; n++ {
		whole := n / 32 * 32
		if !cpu.X86.HasAVX2 {
			whole = 0
		}
		if got := plainPrefix(filler[:n]); got != whole {
			t.Fatalf("plainPrefix of %d plain bytes = %d, want %d", n, got, whole)
		}
		eachPlacement(filler[:n], stops, plains, whole, func(s string, c byte, p, want int) {
			if got := plainPrefix(s); got != want {
				t.Fatalf("plainPrefix with %#x at %d of %d bytes = %d, want %d", c, p, n, got, want)
			}
			checkString(t, s)
		})
	}
}

// TestWriteStringWithoutTheVectorScanWritesTheSame runs the escape cases
// again with the vector scan off, as on a CPU without AVX2.
func TestWriteStringWithoutTheVectorScanWritesTheSame(t *testing.T) {
	if !cpu.X86.HasAVX2 {
		t.Log("no AVX2 here: every test already runs without the vector scan")
	}
	long := strings.Repeat("a \"quoted\" line\n\u2028 with é and \x01 in it, ", 8) + "\xff" + strings.Repeat("z", 70)
	var with Buffer
	WriteString(&with, long)
	saved := cpu.X86.HasAVX2
	cpu.X86.HasAVX2 = false
	defer func() { cpu.X86.HasAVX2 = saved }()
	if got := plainPrefix(long); got != 0 {
		t.Fatalf("plainPrefix without AVX2 = %d, want 0", got)
	}
	var without Buffer
	WriteString(&without, long)
	if with.String() != without.String() {
		t.Fatalf("WriteString differs without the vector scan:\n%s\n%s", with.String(), without.String())
	}
	checkString(t, long)
}

// TestSpecialPrefixStopsOnlyAtBytesAJSONStringMustEscape is the test above
// for the scan IndexSpecial uses: it stops at control characters, quotes
// and backslashes, and runs through UTF-8 and DEL; IndexSpecial finds what
// a byte-by-byte search finds, with the vector scan and without it.
func TestSpecialPrefixStopsOnlyAtBytesAJSONStringMustEscape(t *testing.T) {
	stops := []byte{0x00, 0x0a, 0x1f, '"', '\\'}
	plains := []byte{0x20, '!', '#', '[', ']', 0x7f, 0x80, 0xc3, 0xe2, 0xff}
	filler := strings.Repeat("abcdefghijklmnopqrstuvwxyz 0123456789.", 5)
	naive := func(s string) int {
		return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == '"' || r == '\\' })
	}
	saved := cpu.X86.HasAVX2
	defer func() { cpu.X86.HasAVX2 = saved }()
	for _, vector := range []bool{saved, false} {
		cpu.X86.HasAVX2 = vector
		for n := 0; n <= 140; n++ {
			whole := n / 32 * 32
			if !vector {
				whole = 0
			}
			if got := specialPrefix(filler[:n]); got != whole {
				t.Fatalf("specialPrefix (vector %v) of %d plain bytes = %d, want %d", vector, n, got, whole)
			}
			eachPlacement(filler[:n], stops, plains, whole, func(s string, c byte, p, want int) {
				if got := specialPrefix(s); got != want {
					t.Fatalf("specialPrefix (vector %v) with %#x at %d of %d bytes = %d, want %d", vector, c, p, n, got, want)
				}
				// strings.IndexFunc reads invalid UTF-8 as U+FFFD, which is no stop either.
				if got, want := IndexSpecial(s), naive(s); got != want {
					t.Fatalf("IndexSpecial (vector %v) with %#x at %d of %d bytes = %d, want %d", vector, c, p, n, got, want)
				}
			})
		}
	}
}

// eachPlacement puts each stop and each plain byte at every position of
// filler in turn, telling check the string, the byte, its position and
// what a prefix scan must return: the position of a stop that lies in the
// whole blocks scanned (whole bytes), else whole.
func eachPlacement(filler string, stops, plains []byte, whole int, check func(s string, c byte, p, want int)) {
	for p := range len(filler) {
		for _, c := range append(stops, plains...) {
			b := []byte(filler)
			b[p] = c
			want := whole
			if strings.IndexByte(string(stops), c) >= 0 && p < whole {
				want = p
			}
			check(string(b), c, p, want)
		}
	}
}
