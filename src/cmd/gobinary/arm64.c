/* An AArch64 instruction classifier (arm64.h), after the Arm Architecture
 * Reference Manual's A64 encoding index (section C4.1): the top-level groups
 * by op0 (bits 28-25), then the few encodings named in arm64.h. What is not
 * named writes what its group's format says it may, or, where that is not
 * known here, every register. */
#include "arm64.h"

#include <string.h>

#define ALL 0x7fffffffu /* x0-x30; 31 is sp or zr, never tracked */

static uint32_t bit(unsigned r)
{
	return r < 31 ? 1u << r : 0;
}

/* The low bits of v as a signed number. */
static int64_t sext(uint64_t v, unsigned bits)
{
	uint64_t m = (uint64_t)1 << (bits - 1);
	v &= ((uint64_t)1 << bits) - 1;
	return (int64_t)((v ^ m) - m);
}

static void data_immediate(uint32_t w, uint64_t ip, struct ef_a64 *x)
{
	x->writes = bit(x->rd);
	x->uses = bit(x->rn); /* but in ADR, ADRP, ADD and MOVZ, below */
	if ((w & 0x9f000000) == 0x90000000) { /* ADRP */
		x->kind = EF_A64_ADRP;
		x->uses = 0;
		x->target = (ip & ~(uint64_t)0xfff) +
			    (uint64_t)(sext(((w >> 5) & 0x7ffff) << 2 | ((w >> 29) & 3), 21) * 4096);
	} else if ((w & 0x9f000000) == 0x10000000) { /* ADR */
		x->kind = EF_A64_ADR;
		x->uses = 0;
		x->target = ip + (uint64_t)sext(((w >> 5) & 0x7ffff) << 2 | ((w >> 29) & 3), 21);
	} else if ((w & 0xff800000) == 0x91000000) { /* ADD (immediate), 64-bit */
		x->kind = EF_A64_ADD_IMM;
		x->uses = 0; /* an address and an offset: another address, followed */
		x->imm = (int64_t)((w >> 10) & 0xfff) << (w & (1u << 22) ? 12 : 0);
	} else if ((w & 0x7fc00000) == 0x31000000 && ((w >> 10) & 0xfff) == 1 && x->rd == 31) {
		x->kind = EF_A64_CMN1; /* ADDS zr, rn, #1, either width, unshifted */
		x->sf = (int)(w >> 31);
		x->writes = 0;
	} else if ((w & 0x7f800000) == 0x52800000 && ((w >> 5) & 0xffff) == 0) {
		x->kind = EF_A64_MOVZ0; /* MOVZ rd, #0, either width */
		x->uses = 0;
	}
}

/* A branch that may fall through, words instructions away, testing uses. */
static void conditional(struct ef_a64 *x, uint64_t ip, int64_t words, uint32_t uses)
{
	x->kind = EF_A64_BRANCH;
	x->cond = 1;
	x->target = ip + (uint64_t)(words * 4);
	x->uses = uses;
	x->writes = 0;
}

static void branch_system(uint32_t w, uint64_t ip, struct ef_a64 *x)
{
	if ((w & 0x7c000000) == 0x14000000) { /* B, BL */
		x->target = ip + (uint64_t)(sext(w & 0x3ffffff, 26) * 4);
		x->kind = w >> 31 ? EF_A64_CALL : EF_A64_BRANCH;
		x->writes = w >> 31 ? ALL : 0;
	} else if ((w & 0xff000000) == 0x54000000) { /* B.cond, BC.cond */
		conditional(x, ip, sext((w >> 5) & 0x7ffff, 19), 0);
	} else if ((w & 0x7e000000) == 0x34000000) { /* CBZ, CBNZ */
		conditional(x, ip, sext((w >> 5) & 0x7ffff, 19), bit(x->rt));
	} else if ((w & 0x7e000000) == 0x36000000) { /* TBZ, TBNZ */
		conditional(x, ip, sext((w >> 5) & 0x3fff, 14), bit(x->rt));
	} else if ((w & 0xfe000000) == 0xd6000000) { /* BR, BLR, RET... */
		unsigned opc = (w >> 21) & 0xf;
		x->uses = bit(x->rn);
		if (opc == 0 || opc == 2) { /* BR, RET */
			x->kind = EF_A64_STOP;
			x->writes = 0;
		}
	} else if ((w & 0xffc00000) == 0xd5000000) {
		/* System: MRS and SYSL (L, bit 21) write rt; hints, barriers,
		 * MSR and SYS none. */
		x->writes = w & (1u << 21) ? bit(x->rt) : 0;
	}
}

/* Loads and stores of one general register: unsigned offset, unscaled,
 * pre- and post-index; the register-offset and atomic forms. */
static void load_store_register(uint32_t w, struct ef_a64 *x)
{
	unsigned size = w >> 30, opc = (w >> 22) & 3, v = (w >> 26) & 1;
	int load = opc != 0 && !(v == 0 && size == 3 && opc == 2); /* not PRFM */
	int addressed = 0, writeback = 0;
	int64_t off = 0;
	if (v && opc >= 2)
		load = opc == 3; /* 128-bit SIMD: STR q is opc 10, LDR q 11 */
	if (w & (1u << 24)) { /* unsigned offset */
		addressed = 1;
		off = (int64_t)((w >> 10) & 0xfff) << size;
	} else if (!(w & (1u << 21))) {
		unsigned op2 = (w >> 10) & 3;
		int64_t imm9 = sext((w >> 12) & 0x1ff, 9);
		addressed = op2 != 2; /* 2: unprivileged (LDTR, STTR) */
		writeback = op2 == 1 || op2 == 3;
		off = op2 == 1 ? 0 : imm9; /* post-index: the access is at the base */
	} else {
		unsigned op2 = (w >> 10) & 3;
		if (op2 == 0) { /* atomic memory operations (LSE): rt gets the old value */
			x->writes = bit(x->rt);
			x->uses = bit(x->rm); /* rs: the operand */
			if (!v && (w & 0xf000) == 0x8000) { /* SWP: o3 1, opc 000 */
				x->kind = EF_A64_SWP;
				x->size = 1u << size;
			}
			return;
		}
		/* 2: register offset (the index, rm, is a value); 1, 3:
		 * pointer-authenticated (3 writes back) */
		x->writes = (load ? bit(x->rt) : 0) | (op2 == 3 ? bit(x->rn) : 0);
		x->uses = (load || v ? 0 : bit(x->rt)) | (op2 == 2 ? bit(x->rm) : 0);
		return;
	}
	x->writes = (load ? bit(x->rt) : 0) | (writeback ? bit(x->rn) : 0);
	x->uses = load || v ? 0 : bit(x->rt);
	if (!addressed || v || (opc == 2 && size == 3))
		return; /* a SIMD register, or PRFM */
	x->kind = load ? EF_A64_LOAD : EF_A64_STORE;
	/* LDRSB, LDRSH, LDRSW: as many bytes read, sign-extended */
	x->size = 1u << size;
	x->imm = off;
}

static void load_store(uint32_t w, struct ef_a64 *x)
{
	if ((w & 0x3f000000) == 0x08000000) {
		/* Exclusive and ordered: o2 (bit 23), L (22), o1 (21), o0 (15). */
		unsigned o2 = (w >> 23) & 1, l = (w >> 22) & 1, o1 = (w >> 21) & 1, o0 = (w >> 15) & 1;
		x->size = 1u << (w >> 30);
		if (o2 && !o1 && !l) { /* STLR, STLLR */
			x->writes = 0;
			x->uses = bit(x->rt);
			x->kind = o0 ? EF_A64_STLR : EF_A64_OTHER;
		} else if (o2 && !o1 && l && o0) { /* LDAR */
			x->writes = bit(x->rt);
			x->kind = EF_A64_LOAD;
			x->imm = 0;
		} else { /* exclusive loads write rt (and rt2), stores rs; CAS rs */
			x->writes = bit(x->rt) | bit((w >> 10) & 31) | bit((w >> 16) & 31);
			x->uses = l ? bit(x->rm) : bit(x->rt) | bit((w >> 10) & 31) | bit(x->rm);
		}
	} else if ((w & 0x3b000000) == 0x18000000) { /* LDR (literal) */
		x->writes = bit(x->rt);
	} else if ((w & 0x38000000) == 0x28000000) { /* LDP, STP and their kin */
		unsigned mode = (w >> 23) & 3;
		uint32_t pair = bit(x->rt) | bit((w >> 10) & 31);
		int load = (w >> 22) & 1, v = (w >> 26) & 1;
		x->writes = (load ? pair : 0) | (mode == 1 || mode == 3 ? bit(x->rn) : 0);
		x->uses = load || v ? 0 : pair;
	} else if ((w & 0x38000000) == 0x38000000) {
		load_store_register(w, x);
	}
}

void ef_a64_decode(const uint8_t *p, uint64_t ip, struct ef_a64 *x)
{
	uint32_t w = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	memset(x, 0, sizeof(*x));
	x->kind = EF_A64_OTHER;
	x->writes = ALL;
	x->rd = x->rt = w & 31;
	x->rn = (w >> 5) & 31;
	x->rm = (w >> 16) & 31;
	if ((w & 0x1c000000) == 0x10000000) {
		data_immediate(w, ip, x);
	} else if ((w & 0x1c000000) == 0x14000000) {
		branch_system(w, ip, x);
	} else if ((w & 0x0a000000) == 0x08000000) {
		load_store(w, x);
	} else if ((w & 0x0e000000) == 0x0a000000) {
		/* Data processing, register: writes rd (flags only when it is
		 * zr) from rn and rm (in the few of one source, rm's bits are
		 * an opcode: taken as a use all the same). */
		x->writes = bit(x->rd);
		x->uses = bit(x->rn) | bit(x->rm);
		if ((w & 0x7f200000) == 0x2a000000 && x->rn == 31 && ((w >> 10) & 63) == 0)
			x->kind = EF_A64_MOV; /* ORR rd, zr, rm, LSL #0, either width */
	} else if ((w & 0x0e000000) == 0x0e000000) {
		/* SIMD and floating point: a few (UMOV, FMOV, FCVTZS) write rd. */
		x->writes = bit(x->rd);
	} else if ((w & 0xffff0000) == 0) {
		x->kind = EF_A64_STOP; /* UDF: Go's padding between functions */
		x->writes = 0;
	}
}
