/* An x86-64 instruction length decoder (x86.h), after the opcode maps of the
 * Intel SDM volume 2, appendix A, in 64-bit mode. */
#include "x86.h"

#include <string.h>

/* What follows an opcode. */
enum {
	M = 1,	     /* a ModRM byte (and SIB, displacement) */
	I8 = 2,	     /* an 8-bit immediate */
	IZ = 4,	     /* 16 or 32 bits (66 prefix), sign-extended */
	IV = 8,	     /* 16, 32 or 64 bits (MOV r, imm) */
	I16 = 16,    /* 16 bits (RET imm16, and ENTER's first) */
	MOFFS = 32,  /* a 64-bit address (MOV AL/rAX, moffs) */
	G3 = 64,     /* F6/F7: an immediate only for TEST (reg 0 and 1) */
	BAD = 128,   /* invalid in 64-bit mode, a prefix where an opcode is due, or not handled */
};

static unsigned one_byte(unsigned op)
{
	if (op < 0x40) {
		if (op == 0x0f)
			return BAD; /* the escape, handled by the caller */
		switch (op & 7) {
		case 4:
			return I8;
		case 5:
			return IZ;
		case 6:
		case 7:
			return BAD; /* push/pop of segments, DAA... and prefixes */
		default:
			return M;
		}
	}
	if (op < 0x50)
		return BAD; /* REX after REX */
	if (op < 0x60)
		return 0;
	if (op >= 0x70 && op < 0x80)
		return I8;
	if (op >= 0x84 && op < 0x90)
		return M;
	if (op >= 0x90 && op < 0xa0)
		return op == 0x9a ? BAD : 0;
	if (op >= 0xa0 && op < 0xa4)
		return MOFFS;
	if (op >= 0xb0 && op < 0xb8)
		return I8;
	if (op >= 0xb8 && op < 0xc0)
		return IV;
	if (op >= 0xd8 && op < 0xe0)
		return M; /* x87 */
	if (op >= 0xe0 && op < 0xe8)
		return I8;
	switch (op) {
	case 0x63:
		return M;
	case 0x68:
		return IZ;
	case 0x69:
		return M | IZ;
	case 0x6a:
		return I8;
	case 0x6b:
		return M | I8;
	case 0x6c: case 0x6d: case 0x6e: case 0x6f:
		return 0;
	case 0x80: case 0x83: case 0xc0: case 0xc1: case 0xc6:
		return M | I8;
	case 0x81: case 0xc7:
		return M | IZ;
	case 0xa4: case 0xa5: case 0xa6: case 0xa7:
	case 0xaa: case 0xab: case 0xac: case 0xad: case 0xae: case 0xaf:
		return 0;
	case 0xa8:
		return I8;
	case 0xa9:
		return IZ;
	case 0xc2: case 0xca:
		return I16;
	case 0xc3: case 0xc9: case 0xcb: case 0xcc: case 0xcf:
		return 0;
	case 0xc8:
		return I16 | I8;
	case 0xcd:
		return I8;
	case 0xd0: case 0xd1: case 0xd2: case 0xd3:
		return M;
	case 0xd7:
		return 0;
	case 0xe8: case 0xe9:
		return IZ;
	case 0xeb:
		return I8;
	case 0xec: case 0xed: case 0xee: case 0xef:
		return 0;
	case 0xf1: case 0xf4: case 0xf5:
	case 0xf8: case 0xf9: case 0xfa: case 0xfb: case 0xfc: case 0xfd:
		return 0;
	case 0xf6: case 0xf7:
		return M | G3;
	case 0xfe: case 0xff:
		return M;
	default:
		return BAD; /* 60-62 (62: EVEX), 64-67, 82, C4/C5 (VEX, handled), CE, D4-D6, EA, F0, F2, F3 */
	}
}

static unsigned two_byte(unsigned op)
{
	if (op >= 0x80 && op < 0x90)
		return IZ; /* Jcc rel32 */
	if (op >= 0xc8 && op < 0xd0)
		return 0; /* BSWAP */
	if (op >= 0x70 && op < 0x74)
		return M | I8;
	if ((op >= 0x24 && op < 0x28) || (op >= 0x3b && op < 0x40))
		return BAD;
	switch (op) {
	case 0x05: case 0x06: case 0x07: case 0x08: case 0x09: case 0x0b: case 0x0e:
	case 0x30: case 0x31: case 0x32: case 0x33: case 0x34: case 0x35: case 0x37:
	case 0x77: case 0xa0: case 0xa1: case 0xa2: case 0xa8: case 0xa9: case 0xaa:
		return 0;
	case 0xa4: case 0xac: case 0xba: case 0xc2: case 0xc4: case 0xc5: case 0xc6:
		return M | I8;
	case 0x04: case 0x0a: case 0x0c: case 0x0f: case 0x36: case 0x39:
	case 0x38: case 0x3a: /* escapes, handled by the caller */
	case 0x78: case 0x79: case 0x7a: case 0x7b: case 0xff:
		return BAD;
	default:
		return M;
	}
}

static unsigned vex_map(unsigned map, unsigned op)
{
	if (map == 1) {
		if (op == 0x77)
			return 0; /* VZEROUPPER, VZEROALL */
		if ((op >= 0x70 && op < 0x74) || op == 0xc2 || op == 0xc4 || op == 0xc5 || op == 0xc6)
			return M | I8;
		return M;
	}
	return map == 2 || map == 5 || map == 6 ? M : map == 3 ? M | I8 : BAD;
}

/* Little-endian signed reads; the caller has checked the bounds. */
static int64_t sread(const uint8_t *p, unsigned len)
{
	uint64_t v = 0;
	if (len == 0)
		return 0;
	for (unsigned i = 0; i < len; i++)
		v |= (uint64_t)p[i] << (8 * i);
	if (len < 8 && (v >> (8 * len - 1)) & 1)
		v |= ~(uint64_t)0 << (8 * len);
	return (int64_t)v;
}

int ef_x86_decode(const uint8_t *p, size_t n, uint64_t ip, struct ef_x86 *x)
{
	size_t at = 0, max = n < 15 ? n : 15; /* no instruction is longer than 15 bytes */
	unsigned rex = 0, flags, r = 0, xx = 0, b = 0;
	int legacy_sse = 0;

	memset(x, 0, sizeof(*x));
	x->base = -1;
	for (;; at++) { /* legacy prefixes */
		if (at >= max)
			return -1;
		unsigned c = p[at];
		if (c == 0x66)
			x->o16 = 1;
		else if (c == 0xf0 || c == 0xf2 || c == 0xf3)
			legacy_sse = 1;
		else if (c != 0x2e && c != 0x3e && c != 0x26 && c != 0x36 && c != 0x64 && c != 0x65)
			break; /* 67 (address size) is refused as an opcode below */
	}
	if ((p[at] & 0xf0) == 0x40) {
		rex = p[at++];
		if (at >= max)
			return -1;
	}
	unsigned c = p[at++];
	if (c == 0xc4 || c == 0xc5) {
		if (rex || x->o16 || legacy_sse || at + (c == 0xc4 ? 2 : 1) >= max)
			return -1;
		unsigned b1 = p[at++];
		r = !(b1 & 0x80);
		if (c == 0xc4) {
			unsigned b2 = p[at++];
			xx = !(b1 & 0x40);
			b = !(b1 & 0x20);
			x->map = b1 & 0x1f;
			x->w = (b2 >> 7) & 1;
		} else {
			x->map = 1;
		}
		x->vex = 1;
		x->op = p[at++];
		flags = vex_map(x->map, x->op);
	} else if (c == 0x62) { /* EVEX (BOUND is invalid in 64-bit mode): Go 1.26's runtime has AVX-512 */
		if (rex || x->o16 || legacy_sse || at + 3 >= max)
			return -1;
		unsigned p0 = p[at], p1 = p[at + 1];
		at += 3;
		r = !(p0 & 0x80);
		xx = !(p0 & 0x40);
		b = !(p0 & 0x20);
		x->map = p0 & 7;
		x->w = (p1 >> 7) & 1;
		x->vex = 1;
		x->op = p[at++];
		flags = x->map == 1 && x->op == 0x77 ? BAD : vex_map(x->map, x->op);
	} else if (c == 0x0f) {
		if (at >= max)
			return -1;
		unsigned c2 = p[at++];
		if (c2 == 0x38 || c2 == 0x3a) {
			if (at >= max)
				return -1;
			x->map = c2 == 0x38 ? 2 : 3;
			x->op = p[at++];
			flags = c2 == 0x38 ? M : M | I8;
		} else {
			x->map = 1;
			x->op = c2;
			flags = two_byte(c2);
		}
	} else {
		x->op = c;
		flags = one_byte(c);
	}
	if (flags & BAD)
		return -1;
	/* 66 before a near branch: Intel and AMD disagree on its length. */
	if (x->o16 && ((x->map == 0 && (x->op == 0xe8 || x->op == 0xe9)) ||
		       (x->map == 1 && !x->vex && (x->op & 0xf0) == 0x80)))
		return -1;
	if (rex) {
		x->w = (rex >> 3) & 1;
		r = (rex >> 2) & 1;
		xx = (rex >> 1) & 1;
		b = rex & 1;
	}
	x->rexb = (int)b;
	(void)xx; /* an index register makes the operand no plain [base]: its number is not needed */

	int64_t disp = 0;
	if (flags & M) {
		if (at >= max)
			return -1;
		unsigned m = p[at++];
		x->modrm = 1;
		x->mod = m >> 6;
		x->reg = ((m >> 3) & 7) | r << 3;
		x->rm = (m & 7) | b << 3;
		if (x->mod != 3) {
			unsigned disp_len = x->mod == 1 ? 1 : x->mod == 2 ? 4 : 0;
			int index = 0, base = (int)((m & 7) | b << 3);
			if ((m & 7) == 4) { /* SIB */
				if (at >= max)
					return -1;
				unsigned sib = p[at++];
				index = ((sib >> 3) & 7) != 4 || xx; /* 4 without REX.X: none */
				base = (int)((sib & 7) | b << 3);
				if ((sib & 7) == 5 && x->mod == 0) {
					disp_len = 4;
					base = -1;
				}
			} else if ((m & 7) == 5 && x->mod == 0) {
				disp_len = 4;
				x->rip = 1;
				base = -1;
			}
			if (at + disp_len > max)
				return -1;
			disp = sread(p + at, disp_len);
			at += disp_len;
			x->base = !index && disp == 0 && !x->rip ? base : -1;
		}
	}
	unsigned imm = 0;
	if (flags & I16)
		imm += 2;
	if (flags & I8)
		imm += 1;
	if (flags & IZ)
		imm += x->o16 ? 2 : 4;
	if (flags & IV)
		imm += x->w ? 8 : x->o16 ? 2 : 4;
	if (flags & MOFFS)
		imm += 8;
	if ((flags & G3) && (x->reg & 7) < 2)
		imm += x->op == 0xf6 ? 1 : x->o16 ? 2 : 4;
	if (at + imm > max)
		return -1;
	/* The last immediate: ENTER's is its one-byte nesting level. */
	unsigned last = (flags & (I16 | I8)) == (I16 | I8) ? 1 : imm;
	x->imm_len = imm;
	x->imm = last <= 8 ? sread(p + at + imm - last, last) : 0;
	at += imm;
	x->len = (unsigned)at;
	if (x->rip)
		x->target = ip + at + (uint64_t)disp;
	return 0;
}
