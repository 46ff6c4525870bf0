#include "textflag.h"

// func plainPrefixAVX2(s string) int
//
// The length of the longest prefix of s, in whole 32-byte blocks, whose
// bytes are all plain ASCII to a JSON string (none < 0x20, ≥ 0x80, '"' or
// '\\'), or the index of the first byte that is not, if it lies in one.
// One signed compare finds both < 0x20 and ≥ 0x80 (those are negative).
TEXT ·plainPrefixAVX2(SB), NOSPLIT, $0-24
	MOVQ s_base+0(FP), SI
	MOVQ s_len+8(FP), CX
	XORQ AX, AX
	CMPQ CX, $32
	JB   done

	MOVQ $0x2020202020202020, DX
	VMOVQ DX, X1
	VPBROADCASTQ X1, Y1 // 0x20
	MOVQ $0x2222222222222222, DX
	VMOVQ DX, X3
	VPBROADCASTQ X3, Y3 // '"'
	MOVQ $0x5c5c5c5c5c5c5c5c, DX
	VMOVQ DX, X5
	VPBROADCASTQ X5, Y5 // '\\'

	// Two blocks a round while 64 bytes remain.
pairs:
	LEAQ 64(AX), DX
	CMPQ DX, CX
	JA   single
	VMOVDQU   (SI)(AX*1), Y0
	VMOVDQU   32(SI)(AX*1), Y7
	VPCMPGTB  Y0, Y1, Y2
	VPCMPEQB  Y0, Y3, Y4
	VPCMPEQB  Y0, Y5, Y6
	VPOR      Y2, Y4, Y2
	VPOR      Y2, Y6, Y2
	VPCMPGTB  Y7, Y1, Y8
	VPCMPEQB  Y7, Y3, Y9
	VPCMPEQB  Y7, Y5, Y10
	VPOR      Y8, Y9, Y8
	VPOR      Y8, Y10, Y8
	VPOR      Y2, Y8, Y11
	VPTEST    Y11, Y11
	JNZ       foundPair
	MOVQ      DX, AX
	JMP       pairs

foundPair:
	VPMOVMSKB Y2, DX
	TESTL     DX, DX
	JNZ       found
	ADDQ      $32, AX
	VPMOVMSKB Y8, DX
	JMP       found

single:
	LEAQ 32(AX), DX
	CMPQ DX, CX
	JA   end
	VMOVDQU   (SI)(AX*1), Y0
	VPCMPGTB  Y0, Y1, Y2
	VPCMPEQB  Y0, Y3, Y4
	VPCMPEQB  Y0, Y5, Y6
	VPOR      Y2, Y4, Y2
	VPOR      Y2, Y6, Y2
	VPMOVMSKB Y2, DX
	TESTL     DX, DX
	JNZ       found
	ADDQ      $32, AX
	JMP       end

found:
	BSFL DX, DX
	ADDQ DX, AX

end:
	VZEROUPPER

done:
	MOVQ AX, ret+16(FP)
	RET

// func specialPrefixAVX2(s string) int
//
// plainPrefixAVX2 for a scanner of JSON strings, which reads UTF-8 as it
// is: the length of the longest prefix of s, in whole 32-byte blocks, with
// no byte < 0x20, '"' or '\\', or the index of the first such byte, if it
// lies in one. A byte is < 0x20 when it equals its unsigned minimum with
// 0x1f: bytes ≥ 0x80 pass, where plainPrefixAVX2's signed compare stops.
TEXT ·specialPrefixAVX2(SB), NOSPLIT, $0-24
	MOVQ s_base+0(FP), SI
	MOVQ s_len+8(FP), CX
	XORQ AX, AX
	CMPQ CX, $32
	JB   sdone

	MOVQ $0x1f1f1f1f1f1f1f1f, DX
	VMOVQ DX, X1
	VPBROADCASTQ X1, Y1 // 0x1f
	MOVQ $0x2222222222222222, DX
	VMOVQ DX, X3
	VPBROADCASTQ X3, Y3 // '"'
	MOVQ $0x5c5c5c5c5c5c5c5c, DX
	VMOVQ DX, X5
	VPBROADCASTQ X5, Y5 // '\\'

	// Two blocks a round while 64 bytes remain.
spairs:
	LEAQ 64(AX), DX
	CMPQ DX, CX
	JA   ssingle
	VMOVDQU   (SI)(AX*1), Y0
	VMOVDQU   32(SI)(AX*1), Y7
	VPMINUB   Y0, Y1, Y2
	VPCMPEQB  Y0, Y2, Y2
	VPCMPEQB  Y0, Y3, Y4
	VPCMPEQB  Y0, Y5, Y6
	VPOR      Y2, Y4, Y2
	VPOR      Y2, Y6, Y2
	VPMINUB   Y7, Y1, Y8
	VPCMPEQB  Y7, Y8, Y8
	VPCMPEQB  Y7, Y3, Y9
	VPCMPEQB  Y7, Y5, Y10
	VPOR      Y8, Y9, Y8
	VPOR      Y8, Y10, Y8
	VPOR      Y2, Y8, Y11
	VPTEST    Y11, Y11
	JNZ       sfoundPair
	MOVQ      DX, AX
	JMP       spairs

sfoundPair:
	VPMOVMSKB Y2, DX
	TESTL     DX, DX
	JNZ       sfound
	ADDQ      $32, AX
	VPMOVMSKB Y8, DX
	JMP       sfound

ssingle:
	LEAQ 32(AX), DX
	CMPQ DX, CX
	JA   send
	VMOVDQU   (SI)(AX*1), Y0
	VPMINUB   Y0, Y1, Y2
	VPCMPEQB  Y0, Y2, Y2
	VPCMPEQB  Y0, Y3, Y4
	VPCMPEQB  Y0, Y5, Y6
	VPOR      Y2, Y4, Y2
	VPOR      Y2, Y6, Y2
	VPMOVMSKB Y2, DX
	TESTL     DX, DX
	JNZ       sfound
	ADDQ      $32, AX
	JMP       send

sfound:
	BSFL DX, DX
	ADDQ DX, AX

send:
	VZEROUPPER

sdone:
	MOVQ AX, ret+16(FP)
	RET
