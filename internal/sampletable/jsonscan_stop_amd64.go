package sampletable

import "golang.org/x/sys/cpu"

//go:noescape
func stopPrefixAVX2(s string, or, eq, quote, le byte) int

// stopPrefix is how many leading bytes of s a vector scan has found free
// of stop bytes (x|or == eq, x == quote, or x <= le), in whole 32-byte
// blocks or up to the first stop byte if it lies in one; 0 without AVX2.
// The callers' eight-bytes-a-step loops finish the rest.
func stopPrefix(s string, or, eq, quote, le byte) int {
	if !cpu.X86.HasAVX2 || len(s) < 32 {
		return 0
	}
	return stopPrefixAVX2(s, or, eq, quote, le)
}
