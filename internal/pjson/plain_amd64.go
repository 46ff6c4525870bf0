package pjson

import "golang.org/x/sys/cpu"

//go:noescape
func plainPrefixAVX2(s string) int

// plainPrefix is how many leading bytes of s a vector scan has found plain
// (see plainASCII8), in whole 32-byte blocks or up to the first byte that
// is not: the scan that writing a trajectory spends its time in runs 32
// bytes an instruction instead of 8. The caller finishes the rest.
func plainPrefix(s string) int {
	if !cpu.X86.HasAVX2 {
		return 0
	}
	return plainPrefixAVX2(s)
}

//go:noescape
func specialPrefixAVX2(s string) int

// specialPrefix is plainPrefix for scanners of JSON strings (IndexSpecial):
// it stops only at '"', '\\' and control characters, not at UTF-8.
func specialPrefix(s string) int {
	if !cpu.X86.HasAVX2 {
		return 0
	}
	return specialPrefixAVX2(s)
}
