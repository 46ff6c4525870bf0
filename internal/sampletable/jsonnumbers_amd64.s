#include "textflag.h"
#include "jsontables_amd64.h"

// The nibble tables of a number's bytes (jsonnumbers.go): bit 0 a digit,
// 1 '0', 2 '-', 3 '+', 4 '.', 5 'e' or 'E', 6 ','. High nibbles 0..7: 00
// 00 5C 03 20 00 20 00; low nibbles 0..F: 03 01 01 01 01 21 01 01 01 01 00
// 08 40 04 10 00.
TABLE(numHi<>, $0x00200020035C0000, $0)
TABLE(numLo<>, $0x0101210101010103, $0x0010044008000101)

// NUMBIT stores the 64-bit mask of class bit 7-shift of the block's two
// halves (Y2, Y3) at off(DI).
#define NUMBIT(shift, off) \
	VPSLLW    $shift, Y2, Y4; \
	VPMOVMSKB Y4, AX; \
	VPSLLW    $shift, Y3, Y4; \
	VPMOVMSKB Y4, DX; \
	SHLQ      $32, DX; \
	ORQ       DX, AX; \
	MOVQ      AX, off(DI)

// NUMCLASS looks up the number classes of the 32 bytes in raw into cls.
#define NUMCLASS(raw, cls) \
	NIBBLES(raw, Y4, Y5); \
	LOOKUP(Y4, Y5, Y14, Y13, cls, Y6)

// func numberClassesAVX2(s *byte, blocks int, out *numberClasses)
//
// The number classes of blocks 64-byte blocks from s, one numberClasses
// each (digit, zero, minus, plus, dot, exponent, comma).
TEXT ·numberClassesAVX2(SB), NOSPLIT, $0-24
	MOVQ s+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ out+16(FP), DI
	TESTQ CX, CX
	JZ    done
	VMOVDQU ·nibbleMask(SB), Y15
	VMOVDQU numHi<>(SB), Y14
	VMOVDQU numLo<>(SB), Y13

loop:
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	NUMCLASS(Y0, Y2)
	NUMCLASS(Y1, Y3)
	NUMBIT(7, 0)
	NUMBIT(6, 8)
	NUMBIT(5, 16)
	NUMBIT(4, 24)
	NUMBIT(3, 32)
	NUMBIT(2, 40)
	NUMBIT(1, 48)
	ADDQ $64, SI
	ADDQ $56, DI
	DECQ CX
	JNZ  loop
	VZEROUPPER

done:
	RET
