// TABLE is a 16-byte nibble table (lo its first eight bytes, hi the
// rest) twice, as VPSHUFB looks up each 128-bit lane apart.
#define TABLE(name, lo, hi) \
	DATA name+0x00(SB)/8, lo; \
	DATA name+0x08(SB)/8, hi; \
	DATA name+0x10(SB)/8, lo; \
	DATA name+0x18(SB)/8, hi; \
	GLOBL name(SB), RODATA|NOPTR, $32

// NIBBLES splits the 32 bytes in raw into their high nibbles (hi) and low
// ones (lo), for LOOKUP; Y15 holds 0x0f in every byte.
#define NIBBLES(raw, hi, lo) \
	VPSRLW $4, raw, hi; \
	VPAND  Y15, hi, hi; \
	VPAND  Y15, raw, lo

// LOOKUP sets out to the class bits of the bytes whose nibbles are hi and
// lo: the bits both the entry of the high nibble (hiTable) and that of the
// low one (loTable) have; tmp is scratch.
#define LOOKUP(hi, lo, hiTable, loTable, out, tmp) \
	VPSHUFB hi, hiTable, out; \
	VPSHUFB lo, loTable, tmp; \
	VPAND   tmp, out, out
