/* Just enough of x86-64 to walk a Go function's code (gocode.c): each
 * instruction's length, its opcode, its ModRM operands and, for a memory
 * operand, whether it is RIP-relative (and so the link-time address it
 * names) or a plain [register]. The bytes are another program's file:
 * anything not understood is refused, never skipped. */
#ifndef EPOLLFIX_X86_H
#define EPOLLFIX_X86_H

#include <stddef.h>
#include <stdint.h>

struct ef_x86 {
	unsigned len;	   /* bytes, prefixes and immediates included */
	unsigned map;	   /* 0: one-byte opcodes, 1: 0F, 2: 0F 38, 3: 0F 3A */
	unsigned op;	   /* the opcode byte in that map */
	int vex;	   /* VEX- or EVEX-encoded (C4, C5, 62) */
	int w;		   /* REX.W or VEX.W: 64-bit operand */
	int o16;	   /* the 66 prefix */
	int rexb;	   /* REX.B: for the opcodes that name a register in their low bits */
	int modrm;	   /* a ModRM byte follows the opcode */
	unsigned mod;	   /* its fields, reg and rm widened by REX.R and REX.B */
	unsigned reg, rm;
	int rip;	   /* the memory operand is [rip + disp32] */
	uint64_t target;   /* and its address: the next instruction's plus disp32 */
	int base;	   /* the memory operand is [base] alone (no index, no
			      displacement): that register, 0-15; else -1 */
	int64_t imm;	   /* the last immediate, sign-extended (rel8/rel32 too) */
	unsigned imm_len;
};

/* Decodes the instruction at p (at most n bytes readable), loaded at ip.
 * 0 and *x filled, or -1: truncated, invalid in 64-bit mode, or a form the
 * Go compiler does not emit (address-size prefix, 3DNow!...). */
int ef_x86_decode(const uint8_t *p, size_t n, uint64_t ip, struct ef_x86 *x);

#endif
