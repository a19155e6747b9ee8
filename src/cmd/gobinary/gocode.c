/* The Go runtime's variables, from the code that uses them (gocode.h). */
#include "gocode.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "arm64.h"
#include "gopclntab.h"
#include "x86.h"

#define MAX_CODE (64u << 10) /* findRunnable, the largest, is about 6 KiB */
#define MAX_LOADS 16
#define MAX_SET 64

/* The distinct addresses a function's operands of one kind name. */
struct set {
	uint64_t v[MAX_SET];
	unsigned n;
	int full;
};

static void add(struct set *s, uint64_t a)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->v[i] == a)
			return;
	if (s->n == MAX_SET)
		s->full = 1;
	else
		s->v[s->n++] = a;
}

static int has(const struct set *s, uint64_t a)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->v[i] == a)
			return 1;
	return 0;
}

/* The one address in both a and b (b NULL: in a): 0 and *out, or -1. */
static int only(const struct set *a, const struct set *b, uint64_t *out)
{
	unsigned n = 0;
	if (a->full || (b && b->full))
		return -1;
	for (unsigned i = 0; i < a->n; i++)
		if (!b || has(b, a->v[i])) {
			*out = a->v[i];
			n++;
		}
	return n == 1 ? 0 : -1;
}

/* What a function's code says, by kind of operand: x86-64's, and arm64's
 * (gocode.h) after the slash. */
struct uses {
	struct set lea;	   /* LEAQ x(RIP), r / ADRP+ADD (or ADR) r, r then used as a value: &x */
	struct set st32;   /* MOVL r, x(RIP) / STR w */
	struct set st64;   /* MOVQ r, x(RIP) / STR x */
	struct set load;   /* MOVL/MOVQ/MOVLQSX x(RIP), r / LDR w, LDR x, LDRSW, LDAR */
	struct set cmp_m1; /* CMPL x(RIP), $-1 / a 32-bit load, then CMN of it with 1 */
	struct set xchg64; /* XCHGQ r, (r2) with r2 just loaded by LEAQ x(RIP), r2 / SWP x, STLR x */
	struct set call00; /* CALL f with RAX and RBX just zeroed / BL f with R0 and R1: f(nil, 0) */
};

/* The register an instruction zeroes (XOR r, r; MOV $0, r32), or -1. */
static int zeroes(const struct ef_x86 *x)
{
	if (x->vex || x->map != 0)
		return -1;
	if ((x->op == 0x31 || x->op == 0x33) && x->modrm && x->mod == 3 && x->reg == x->rm)
		return (int)x->rm;
	if (x->op >= 0xb8 && x->op < 0xc0 && !x->o16 && x->imm == 0)
		return (int)((x->op & 7) | (x->rexb ? 8 : 0));
	return -1;
}

/* A register-to-register MOV: 0 with *dst and *src, or -1. */
static int reg_move(const struct ef_x86 *x, int *dst, int *src)
{
	if (x->vex || x->map != 0 || !x->modrm || x->mod != 3)
		return -1;
	if (x->op == 0x89) {
		*dst = (int)x->rm, *src = (int)x->reg;
		return 0;
	}
	if (x->op == 0x8b) {
		*dst = (int)x->reg, *src = (int)x->rm;
		return 0;
	}
	return -1;
}

/* Instructions after which a register loaded by LEAQ still holds the address:
 * NOPs, register moves and zeroings, tests. *dst: the register they write, or
 * -1. Anything else may write any register. */
static int keeps_addresses(const struct ef_x86 *x, int *dst)
{
	*dst = -1;
	if (x->vex)
		return 0;
	if (x->map == 0 && x->op == 0x90 && !x->rexb)
		return 1; /* NOP (with REX.B it is XCHG r8, rax) */
	if (x->map == 1 && x->op == 0x1f)
		return 1; /* NOPL */
	if (x->map != 0 || !x->modrm || x->mod != 3)
		return 0;
	switch (x->op) {
	case 0x84: case 0x85: /* TEST */
		return 1;
	case 0x89: case 0x31: /* MOV, XOR: r/m <- reg */
		*dst = (int)x->rm;
		return 1;
	case 0x8b: case 0x33: /* MOV, XOR: reg <- r/m */
		*dst = (int)x->reg;
		return 1;
	default:
		return 0;
	}
}

#define BIT(m, i) ((m)[(i) >> 3] & (1u << ((i)&7)))
#define SET(m, i) ((m)[(i) >> 3] |= (uint8_t)(1u << ((i)&7)))

/* Walks x86-64 code[0..size), loaded at start, twice: the first pass checks that
 * every byte decodes and every branch inside lands on an instruction; the
 * second gathers the operands, forgetting what registers hold at each branch
 * target. 0, or -1 when the code is not understood. */
static int walk(const uint8_t *code, uint32_t size, uint64_t start, struct uses *u)
{
	uint8_t insn[MAX_CODE / 8], target[MAX_CODE / 8];
	struct ef_x86 x;

	memset(insn, 0, sizeof(insn));
	memset(target, 0, sizeof(target));
	for (uint32_t at = 0; at < size; at += x.len) {
		if (ef_x86_decode(code + at, size - at, start + at, &x) != 0)
			return -1;
		SET(insn, at);
		int rel = (x.map == 0 && ((x.op >= 0x70 && x.op < 0x80) || x.op == 0xe8 ||
					  x.op == 0xe9 || x.op == 0xeb || (x.op >= 0xe0 && x.op < 0xe4))) ||
			  (x.map == 1 && !x.vex && x.op >= 0x80 && x.op < 0x90);
		if (!rel)
			continue;
		uint64_t to = start + at + x.len + (uint64_t)x.imm;
		if (to >= start && to < start + size)
			SET(target, to - start);
	}
	for (uint32_t i = 0; i < size; i++)
		if (BIT(target, i) && !BIT(insn, i))
			return -1; /* a branch into an instruction: the decode is wrong */

	uint64_t holds[16];
	int valid[16] = { 0 }, zero[16] = { 0 };
	memset(u, 0, sizeof(*u));
	for (uint32_t at = 0; at < size; at += x.len) {
		ef_x86_decode(code + at, size - at, start + at, &x);
		if (BIT(target, at)) {
			memset(valid, 0, sizeof(valid));
			memset(zero, 0, sizeof(zero));
		}
		int plain = x.map == 0 && !x.vex && !x.o16, dst, src;
		/* Which registers hold 0: RAX and RBX are a call's first two
		 * arguments. A call may write any register. */
		if (plain && x.op == 0xe8) {
			if (zero[0] && zero[3])
				add(&u->call00, start + at + x.len + (uint64_t)x.imm);
			memset(zero, 0, sizeof(zero));
		} else if (zeroes(&x) >= 0) {
			zero[zeroes(&x)] = 1;
		} else if (reg_move(&x, &dst, &src) == 0) {
			zero[dst] = zero[src];
		} else if (keeps_addresses(&x, &dst)) {
			if (dst >= 0)
				zero[dst] = 0;
		} else {
			memset(zero, 0, sizeof(zero));
		}
		if (plain && x.rip) {
			if (x.op == 0x8d && x.w)
				add(&u->lea, x.target);
			else if (x.op == 0x89)
				add(x.w ? &u->st64 : &u->st32, x.target);
			else if (x.op == 0x8b || x.op == 0x63)
				add(&u->load, x.target);
			else if (x.op == 0x83 && (x.reg & 7) == 7 && !x.w && x.imm == -1)
				add(&u->cmp_m1, x.target);
		}
		if (plain && x.rip && x.op == 0x8d && x.w) {
			holds[x.reg] = x.target;
			valid[x.reg] = 1;
		} else if (plain && x.op == 0x87 && x.w && x.mod != 3 && x.base >= 0) {
			if (valid[x.base])
				add(&u->xchg64, holds[x.base]);
			valid[x.reg] = 0;
		} else if (keeps_addresses(&x, &dst)) {
			if (dst >= 0)
				valid[dst] = 0;
		} else {
			memset(valid, 0, sizeof(valid));
		}
	}
	return 0;
}

/* arm64's Go assembler reaches a variable through R27 (REGTMP): ADRP R27,
 * then a load or store at R27 plus the variable's offset in its page, or an
 * ADD R27 first. Code compiled for dynamic linking (Go 1.19's PIE) reaches
 * it through another register: ADRP+ADD, then a load or store at it. An
 * address is taken (the program's own `&v`) where a register holding it,
 * made by ADRP+ADD or ADR, is used as a value: stored, compared, computed
 * with (arm64.h's uses). */
#define A64_REGTMP 27

/* Walks arm64 code[0..size), loaded at start (gocode.h): each instruction a
 * word, so none can be misread as the middle of another. Which registers
 * hold an address (ADRP, ADR, then ADD), a 32-bit variable just loaded, or
 * 0 is forgotten at each branch target, after an unconditional branch or a
 * return, and when an instruction may write the register (any instruction
 * not understood may write all). 0, or -1 for code that is not whole
 * words. */
static int walk_a64(const uint8_t *code, uint32_t size, uint64_t start, struct uses *u)
{
	uint8_t target[MAX_CODE / 4 / 8];
	struct ef_a64 x;

	if (size % 4 || start % 4)
		return -1;
	memset(target, 0, sizeof(target));
	for (uint32_t at = 0; at < size; at += 4) {
		ef_a64_decode(code + at, start + at, &x);
		if ((x.kind == EF_A64_BRANCH || x.kind == EF_A64_CALL) && x.target >= start &&
		    x.target < start + size)
			SET(target, (x.target - start) / 4);
	}
	uint64_t holds[32], loaded[32];
	/* valid: registers holding an address (of a page, after ADRP); full:
	 * the whole address (ADR, ADD) */
	uint32_t valid = 0, full = 0, valid32 = 0, zero = 0;
	memset(u, 0, sizeof(*u));
	for (uint32_t at = 0; at < size; at += 4) {
		if (BIT(target, at / 4))
			valid = full = valid32 = zero = 0;
		ef_a64_decode(code + at, start + at, &x);
		for (uint32_t taken = x.uses & full & ~(1u << A64_REGTMP); taken; taken &= taken - 1)
			add(&u->lea, holds[__builtin_ctz(taken)]);
		uint32_t rn = 1u << x.rn, rm = 1u << x.rm;
		int based = x.rn != 31 && (valid & rn);
		uint64_t a = based ? holds[x.rn] + (uint64_t)x.imm : 0, got = 0;
		int has = 0, zeroed = 0, now32 = 0;
		switch (x.kind) {
		case EF_A64_ADRP:
			got = x.target, has = 1;
			break;
		case EF_A64_ADR:
			got = x.target, has = 2;
			break;
		case EF_A64_ADD_IMM:
			if (based)
				got = a, has = 2;
			break;
		case EF_A64_LOAD:
			if (based && (x.size == 4 || x.size == 8))
				add(&u->load, a);
			now32 = based && x.size == 4;
			break;
		case EF_A64_STORE:
			if (based && (x.size == 4 || x.size == 8))
				add(x.size == 8 ? &u->st64 : &u->st32, a);
			break;
		case EF_A64_STLR:
		case EF_A64_SWP:
			if (based && x.size == 8)
				add(&u->xchg64, holds[x.rn]);
			break;
		case EF_A64_CMN1:
			if (x.rn != 31 && (valid32 & rn))
				add(&u->cmp_m1, loaded[x.rn]);
			break;
		case EF_A64_CALL:
			if ((zero & 3) == 3)
				add(&u->call00, x.target);
			break;
		case EF_A64_MOVZ0:
			zeroed = 1;
			break;
		case EF_A64_MOV:
			zeroed = x.rm == 31 || (zero & rm);
			break;
		default:
			break;
		}
		valid &= ~x.writes;
		full &= ~x.writes;
		valid32 &= ~x.writes;
		zero &= ~x.writes;
		if (x.rd < 31 && has) {
			holds[x.rd] = got;
			valid |= 1u << x.rd;
			if (has == 2)
				full |= 1u << x.rd;
		}
		if (x.rd < 31 && zeroed)
			zero |= 1u << x.rd;
		if (x.rt < 31 && now32) {
			loaded[x.rt] = a;
			valid32 |= 1u << x.rt;
		}
		if (x.kind == EF_A64_STOP || (x.kind == EF_A64_BRANCH && !x.cond))
			valid = full = valid32 = zero = 0; /* what follows is reached by a branch, if at all */
	}
	return 0;
}

/* The code of f, read from the executable segment that holds it whole. */
static int read_code(const struct ef_file *e, const struct ef_load *loads, unsigned n,
		     const struct ef_go_func *f, uint8_t *code)
{
	uint64_t size = f->end - f->start;
	if (f->end <= f->start || size > MAX_CODE)
		return -1;
	for (unsigned i = 0; i < n; i++)
		if ((loads[i].flags & PF_X) && f->start >= loads[i].vaddr &&
		    f->end - loads[i].vaddr <= loads[i].filesz)
			return ef_file_read(e, code, (size_t)size, loads[i].offset + (f->start - loads[i].vaddr));
	return -1;
}

/* [a, a + len) inside one writable segment. */
static int writable(const struct ef_load *loads, unsigned n, uint64_t a, uint64_t len)
{
	for (unsigned i = 0; i < n; i++)
		if ((loads[i].flags & PF_W) && a >= loads[i].vaddr && a - loads[i].vaddr <= loads[i].memsz &&
		    len <= loads[i].memsz - (a - loads[i].vaddr))
			return 1;
	return 0;
}

enum { NETPOLLINIT, NETPOLL, FINDRUNNABLE, NFUNCS };

/* Go 1.27's wake-up (netpoll_epoll.go, netpollPackData): the item's data is
 * taggedPointerPack(nil, 0), which is 0, and netpoll takes an event whose
 * pointer is nil for it. Its code: netpollinit calls runtime.taggedPointerPack
 * with RAX and RBX zeroed, stores the one 64-bit variable it stores
 * (netpollEventFd) without taking its address, and netpoll loads that
 * variable without taking its address either. 0 and *wake, or -1. */
static int nil_tag(const struct ef_file *e, const struct uses *u, uint64_t *wake)
{
	struct ef_go_func pack = { .name = "runtime.taggedPointerPack" };
	const char *why;
	if (only(&u[NETPOLLINIT].st64, NULL, wake) != 0 || has(&u[NETPOLLINIT].lea, *wake) ||
	    !has(&u[NETPOLL].load, *wake) || has(&u[NETPOLL].lea, *wake) ||
	    ef_go_pcln_find(e, &pack, 1, NULL, &why) != 0)
		return -1;
	uint64_t called;
	return only(&u[NETPOLLINIT].call00, NULL, &called) == 0 && called == pack.start ? 0 : -1;
}

int ef_go_code_vars(const struct ef_file *e, struct ef_go_vars *v, const char **why)
{
	struct ef_go_func f[NFUNCS] = {
		[NETPOLLINIT] = { .name = "runtime.netpollinit" },
		[NETPOLL] = { .name = "runtime.netpoll" },
		[FINDRUNNABLE] = { .name = "runtime.findRunnable" },
	};
	struct ef_load loads[MAX_LOADS];
	struct uses *u = calloc(NFUNCS, sizeof(*u));
	uint8_t *code = malloc(MAX_CODE);
	int r = -1;

	if (!u || !code) {
		*why = "out of memory";
		goto out;
	}
	if (ef_go_pcln_find(e, f, NFUNCS, &v->pcln_magic, why) != 0)
		goto out;
	unsigned n = ef_file_loads(e, loads, MAX_LOADS);
	/* The machine's walker: the table's quantum was the machine's already. */
	int (*walker)(const uint8_t *, uint32_t, uint64_t, struct uses *) =
		e->machine == EM_X86_64 ? walk : e->machine == EM_AARCH64 ? walk_a64 : NULL;
	if (!walker) {
		*why = "runtime code of a machine not read";
		goto out;
	}
	for (int k = 0; k < NFUNCS; k++)
		if (read_code(e, loads, n, &f[k], code) != 0 ||
		    walker(code, (uint32_t)(f[k].end - f[k].start), f[k].start, &u[k]) != 0) {
			*why = "runtime code not understood";
			goto out;
		}
	uint64_t epfd_init = 0, epfd_poll = 0, wake_init = 0, wake_poll = 0, lastpoll;
	if (only(&u[NETPOLLINIT].st32, NULL, &epfd_init) != 0 ||
	    only(&u[NETPOLL].cmp_m1, NULL, &epfd_poll) != 0 || epfd_init != epfd_poll) {
		*why = "runtime.epfd not found in runtime.netpollinit and runtime.netpoll";
		goto out;
	}
	v->nil_tag = 0;
	if (only(&u[NETPOLLINIT].lea, &u[NETPOLLINIT].st64, &wake_init) != 0 ||
	    only(&u[NETPOLL].lea, &u[NETPOLL].load, &wake_poll) != 0 || wake_init != wake_poll) {
		if (nil_tag(e, u, &wake_init) != 0) {
			*why = "the wake-up variable not found in runtime.netpollinit and runtime.netpoll";
			goto out;
		}
		v->nil_tag = 1;
	}
	const struct set *x = &u[FINDRUNNABLE].xchg64;
	if (x->full || x->n != 2 || (x->v[0] + 8 != x->v[1] && x->v[1] + 8 != x->v[0])) {
		*why = "runtime.sched not found in runtime.findRunnable";
		goto out;
	}
	lastpoll = x->v[0] < x->v[1] ? x->v[0] : x->v[1];
	v->sched = lastpoll - 8;
	v->epfd = epfd_init;
	v->wake = wake_init;
	if (lastpoll < 8 || !writable(loads, n, v->sched, 24) || !writable(loads, n, v->epfd, 4) ||
	    !writable(loads, n, v->wake, 8) || v->epfd == v->wake ||
	    (v->epfd >= v->sched && v->epfd < v->sched + 24) ||
	    (v->wake >= v->sched && v->wake < v->sched + 24)) {
		*why = "runtime variables found outside the writable data";
		goto out;
	}
	r = 0;
out:
	free(u);
	free(code);
	return r;
}
