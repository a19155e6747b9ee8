/* Just enough of AArch64 (A64) to walk a Go function's code (gocode.c), as
 * x86.h is for x86-64: what each instruction does to the general registers
 * and, for the few kinds the runtime's variables are reached by, its
 * operands. Every instruction is 4 bytes, so none can hide another; one not
 * understood is taken as writing every register, so that no address is ever
 * carried past it. The words are another program's file: any 32 bits
 * decode. */
#ifndef EPOLLFIX_ARM64_H
#define EPOLLFIX_ARM64_H

#include <stdint.h>

enum ef_a64_kind {
	EF_A64_OTHER,	 /* anything else: writes says which registers */
	EF_A64_ADRP,	 /* ADRP rd, page: rd = imm (the page's address) */
	EF_A64_ADR,	 /* ADR rd, label: rd = imm */
	EF_A64_ADD_IMM,	 /* ADD rd, rn, #imm (64-bit, no flags): rd = rn + imm */
	EF_A64_CMN1,	 /* CMN rn, #1 (ADDS zr, rn, #1): rn compared with -1 */
	EF_A64_MOVZ0,	 /* MOVZ rd, #0: rd = 0 */
	EF_A64_MOV,	 /* MOV rd, rm (ORR rd, zr, rm): rd = rm; rm 31 is zr, 0 */
	EF_A64_LOAD,	 /* LDR/LDRSW/LDUR rt, [rn, #imm] of size bytes, or LDAR (imm 0) */
	EF_A64_STORE,	 /* STR/STUR rt, [rn, #imm] of size bytes */
	EF_A64_STLR,	 /* STLR rt, [rn] of size bytes: an atomic store */
	EF_A64_SWP,	 /* SWP{A}{L} rs, rt, [rn] of size bytes: an atomic swap */
	EF_A64_BRANCH,	 /* B, B.cond, CBZ, CBNZ, TBZ, TBNZ: to target */
	EF_A64_CALL,	 /* BL target (writes every register: a call) */
	EF_A64_STOP,	 /* RET, BR, UDF: no instruction after it runs next */
};

struct ef_a64 {
	enum ef_a64_kind kind;
	unsigned rd, rn, rt;   /* 0-31; 31 is sp or zr, as the instruction says */
	unsigned rm;	       /* MOV's source */
	unsigned size;	       /* bytes a load or store moves: 1, 2, 4, 8 */
	int sf;		       /* 64-bit operation (CMN1) */
	int cond;	       /* a branch that may fall through (B.cond, CBZ...) */
	int64_t imm;	       /* the offset of a load or store, or what ADD adds */
	uint64_t target;       /* ADRP's page, ADR's address, a branch's target */
	uint32_t writes;       /* the general registers it may write, a bit each (bit 31 unused) */
	uint32_t uses;	       /* those whose value it reads as a value: stored, compared,
				  computed with (a load's or store's base is not one; not
				  every use is known: a call's arguments are not named) */
};

/* Decodes the instruction at p (4 bytes, little-endian), at address ip.
 * Always succeeds. */
void ef_a64_decode(const uint8_t *p, uint64_t ip, struct ef_a64 *x);

#endif
