#include "textflag.h"

// func stopPrefixAVX2(s string, or, eq, quote, le byte) int
//
// The length of the longest prefix of s, in whole 32-byte blocks, with no
// stop byte, or the index of the first stop byte if it lies in one. A
// byte x stops when x|or == eq, x == quote, or x <= le (unsigned: x equals
// its minimum with le). VEX-encoded throughout, as pjson's scans are.
TEXT ·stopPrefixAVX2(SB), NOSPLIT, $0-32
	MOVQ s_base+0(FP), SI
	MOVQ s_len+8(FP), CX
	XORQ AX, AX
	CMPQ CX, $32
	JB   done

	MOVBQZX or+16(FP), DX
	VMOVQ DX, X1
	VPBROADCASTB X1, Y1
	MOVBQZX eq+17(FP), DX
	VMOVQ DX, X3
	VPBROADCASTB X3, Y3
	MOVBQZX quote+18(FP), DX
	VMOVQ DX, X5
	VPBROADCASTB X5, Y5
	MOVBQZX le+19(FP), DX
	VMOVQ DX, X7
	VPBROADCASTB X7, Y7

loop:
	LEAQ 32(AX), DX
	CMPQ DX, CX
	JA   end
	VMOVDQU   (SI)(AX*1), Y0
	VPOR      Y0, Y1, Y2
	VPCMPEQB  Y2, Y3, Y2
	VPCMPEQB  Y0, Y5, Y4
	VPMINUB   Y0, Y7, Y6
	VPCMPEQB  Y0, Y6, Y6
	VPOR      Y2, Y4, Y2
	VPOR      Y2, Y6, Y2
	VPMOVMSKB Y2, BX
	TESTL     BX, BX
	JNZ       found
	MOVQ      DX, AX
	JMP       loop

found:
	BSFL BX, BX
	ADDQ BX, AX

end:
	VZEROUPPER

done:
	MOVQ AX, ret+24(FP)
	RET
