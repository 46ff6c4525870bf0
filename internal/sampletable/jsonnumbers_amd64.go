package sampletable

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

//go:noescape
func numberClassesAVX2(s *byte, blocks int, out *numberClasses)

// numberBlocks is the number classes of the len(out) 64-byte blocks s
// begins with, 32 bytes an instruction with AVX2.
func numberBlocks(s string, out []numberClasses) {
	if cpu.X86.HasAVX2 {
		numberClassesAVX2(unsafe.StringData(s), len(out), &out[0])
		return
	}
	for i := range out {
		classifyNumberWords(s[i*64:], &out[i])
	}
}
