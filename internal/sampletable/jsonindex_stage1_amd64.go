package sampletable

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func stage1AVX2(s *byte, blocks int, st *stage1State, out *blockMarks, scratch *blockClasses)

// stage1 is the first stage of the len(out) 64-byte blocks that s begins
// with: 64 bytes a turn of one vector loop with AVX2 (and the carry-less
// multiplication every AVX2 CPU has), stage1Words elsewhere.
func stage1(s string, st *stage1State, out []blockMarks) {
	if len(out) == 0 {
		return
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasPCLMULQDQ {
		var scratch blockClasses
		stage1AVX2(unsafe.StringData(s), len(out), st, &out[0], &scratch)
		return
	}
	stage1Words(s, st, out)
}
