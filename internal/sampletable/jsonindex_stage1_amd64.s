#include "textflag.h"
#include "jsontables_amd64.h"

// The nibble tables of the classes (jsonindex_bits.go). A byte is in a
// class when the bit is set both in the entry of its high nibble and in
// that of its low one; bytes ≥ 0x80 have a high nibble no table lists.
//
// classes: bit 0 '"', 1 '\\', 2 '\t' '\n' '\r', 3 ' ', 4 the brackets,
// 5 ':', 6 ',', 7 control (≤ 0x1f). High nibbles 0..7: 84 80 49 20 00 12
// 00 10; low nibbles 0..F: 88 80 81 80 80 80 80 80 80 84 A4 90 C2 94 80 80.
TABLE(classHi<>, $0x1000120020498084, $0)
TABLE(classLo<>, $0x8080808080818088, $0x808094C290A48480)

// escapes: bits 0-3 a byte a backslash may escape ('"', '/', '\\', 'b',
// 'f', 'n', 'r', 't', 'u'), bit 4 'u'. High nibbles 0..7: 00 00 01 00 00
// 02 04 18; low nibbles 0..F: 00 00 0D 00 08 18 04 00 00 00 00 00 02 00 04
// 01.
TABLE(escHi<>, $0x1804020000010000, $0)
TABLE(escLo<>, $0x00041808000D0000, $0x0104000200000000)

// The low nibble of every byte, which jsonnumbers_amd64.s shares.
TABLE(·nibbleMask, $0x0f0f0f0f0f0f0f0f, $0x0f0f0f0f0f0f0f0f)

// CLASS looks up the classes of the 32 bytes in raw: cls the class bits
// (classHi, classLo), esc the escape bits (escHi, escLo). Constants: Y15
// nibble, Y14 classHi, Y13 classLo, Y12 escHi, Y11 escLo; Y6-Y8 are
// scratch.
#define CLASS(raw, cls, esc) \
	NIBBLES(raw, Y6, Y7); \
	LOOKUP(Y6, Y7, Y14, Y13, cls, Y8); \
	LOOKUP(Y6, Y7, Y12, Y11, esc, Y8)

// JOIN stores the 64-bit mask whose low half is in AX and high half in DX
// at off(R13): one store of the whole word, which the word's load after
// takes from the store buffer, where two stores of its halves would make
// it wait for both to reach the cache.
#define JOIN(off) \
	SHLQ $32, DX; \
	ORQ  DX, AX; \
	MOVQ AX, off(R13)

// BIT stores the mask of class bit 7-shift of both halves (Y2, Y4).
#define BIT(shift, off) \
	VPSLLW    $shift, Y2, Y6; \
	VPMOVMSKB Y6, AX; \
	VPSLLW    $shift, Y4, Y6; \
	VPMOVMSKB Y6, DX; \
	JOIN(off)

// BITS stores the mask of class bits 7-s1 and 7-s2 together.
#define BITS(s1, s2, off) \
	VPSLLW    $s1, Y2, Y6; \
	VPSLLW    $s2, Y2, Y7; \
	VPOR      Y7, Y6, Y6; \
	VPMOVMSKB Y6, AX; \
	VPSLLW    $s1, Y4, Y6; \
	VPSLLW    $s2, Y4, Y7; \
	VPOR      Y7, Y6, Y6; \
	VPMOVMSKB Y6, DX; \
	JOIN(off)

// func stage1AVX2(s *byte, blocks int, st *stage1State, out *blockMarks, scratch *blockClasses)
//
// The first stage of the index's pass over blocks 64-byte blocks from s:
// for each, the bytes its second stage visits and the 'u' escapes inside
// strings (blockMarks), with st's carries taken in and given on and its
// flags (spaced, high, bad) gathered; stage1Block is the same in Go. The
// bytes inside strings are the prefix XOR of the unescaped quotes, a
// carry-less multiplication by all ones. VEX-encoded throughout, as the
// other scans are.
TEXT ·stage1AVX2(SB), NOSPLIT, $0-40
	MOVQ s+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ st+16(FP), R8
	MOVQ out+24(FP), DI
	MOVQ scratch+32(FP), R13
	TESTQ CX, CX
	JZ    done

	VMOVDQU ·nibbleMask(SB), Y15
	VMOVDQU classHi<>(SB), Y14
	VMOVDQU classLo<>(SB), Y13
	VMOVDQU escHi<>(SB), Y12
	VMOVDQU escLo<>(SB), Y11
	VPXOR   Y10, Y10, Y10
	VPCMPEQB Y9, Y9, Y9 // all ones: X9 multiplies for the prefix XOR

	MOVQ 0(R8), R9   // escaped carry
	MOVQ 8(R8), R10  // inside a string carry (all ones or zero)
	MOVQ 16(R8), R11 // scalar carry

loop:
	// The block's classes, into scratch (blockClasses' layout): quote,
	// backslash, space, bracket, punct, control, high, not an escape, 'u'.
	VMOVDQU   0(SI), Y0
	VMOVDQU   32(SI), Y1
	CLASS(Y0, Y2, Y3)
	CLASS(Y1, Y4, Y5)
	BIT(7, 0)
	BIT(6, 8)
	BITS(5, 4, 16)
	BIT(3, 24)
	BITS(2, 1, 32)
	VPMOVMSKB Y2, AX
	VPMOVMSKB Y4, DX
	JOIN(40)
	VPMOVMSKB Y0, AX
	VPMOVMSKB Y1, DX
	JOIN(48)
	VPAND     Y15, Y3, Y6
	VPCMPEQB  Y10, Y6, Y6
	VPMOVMSKB Y6, AX
	VPAND     Y15, Y5, Y6
	VPCMPEQB  Y10, Y6, Y6
	VPMOVMSKB Y6, DX
	JOIN(56)
	VPSLLW    $3, Y3, Y6
	VPMOVMSKB Y6, AX
	VPSLLW    $3, Y5, Y6
	VPMOVMSKB Y6, DX
	JOIN(64)

	// escaped: the bytes after odd runs of backslashes (escapedBy).
	MOVQ 8(R13), AX        // backslash
	MOVQ R9, DX
	NOTQ DX
	ANDQ DX, AX            // bs = backslash &^ carry
	LEAQ (AX)(AX*1), BX
	ORQ  R9, BX            // follows = bs<<1 | carry
	MOVQ $0xaaaaaaaaaaaaaaaa, DX
	ANDQ AX, DX
	MOVQ BX, R12
	NOTQ R12
	ANDQ R12, DX           // odd starts = bs & odd &^ follows
	XORL R9, R9
	ADDQ AX, DX            // even runs, and the carry out
	ADCQ $0, R9
	SHLQ $1, DX
	MOVQ $0x5555555555555555, R12
	XORQ R12, DX
	ANDQ BX, DX            // DX = escaped

	// quote: the unescaped quotes; in: the bytes inside strings.
	MOVQ 0(R13), AX
	MOVQ DX, R12
	NOTQ R12
	ANDQ R12, AX           // AX = quote
	VMOVQ AX, X0
	VPCLMULQDQ $0x00, X9, X0, X0
	VMOVQ X0, BX
	XORQ R10, BX           // BX = in
	MOVQ BX, R10
	SARQ $63, R10

	// bad: control characters and escapes JSON does not allow inside
	// strings; the 'u' escapes are the caller's to check.
	MOVQ 40(R13), R12
	ANDQ BX, R12
	ORQ  R12, 40(R8)
	ANDQ BX, DX            // escapes inside strings
	MOVQ 56(R13), R12
	ANDQ DX, R12
	ORQ  R12, 40(R8)
	ANDQ 64(R13), DX
	MOVQ DX, 8(DI)

	// Outside strings: whitespace, and the first byte of each number or
	// literal (a run of bytes of no other class).
	NOTQ BX                // BX = outside
	MOVQ 16(R13), R12
	ANDQ BX, R12
	ORQ  R12, 24(R8)
	MOVQ 48(R13), R12
	ORQ  R12, 32(R8)
	MOVQ 16(R13), R12
	ORQ  24(R13), R12
	ORQ  32(R13), R12
	ORQ  0(R13), R12
	NOTQ R12
	ANDQ BX, R12           // R12 = other
	LEAQ (R12)(R12*1), DX
	ORQ  R11, DX
	NOTQ DX
	ANDQ R12, DX           // DX = starts
	SHRQ $63, R12
	MOVQ R12, R11

	// visit: brackets outside strings, quotes, starts.
	MOVQ 24(R13), R12
	ANDQ BX, R12
	ORQ  AX, R12
	ORQ  DX, R12
	MOVQ R12, 0(DI)

	ADDQ $64, SI
	ADDQ $16, DI
	DECQ CX
	JNZ  loop

	MOVQ R9, 0(R8)
	MOVQ R10, 8(R8)
	MOVQ R11, 16(R8)
	VZEROUPPER

done:
	RET
