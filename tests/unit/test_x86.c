/* The x86-64 decoder the stripped-binary reader walks Go's runtime with
 * (src/cmd/gobinary/x86.c): instructions taken from Go 1.26.8's runtime (objdump's
 * reading beside each), and what it must refuse. The whole text of Go
 * binaries decodes to objdump's instruction boundaries (doc/go.md). */
#include <criterion/criterion.h>
#include <stdint.h>

#include "x86.h"

static struct ef_x86 decode(const uint8_t *p, size_t n, uint64_t ip)
{
	struct ef_x86 x;
	cr_assert_eq(ef_x86_decode(p, n, ip, &x), 0, "decode at %#llx", (unsigned long long)ip);
	return x;
}

Test(x86, rip_relative_operands_name_their_target)
{
	/* 44f597: lea 0x13d3aa(%rip),%rdi  # runtime.sched+0x8 */
	static const uint8_t lea[] = { 0x48, 0x8d, 0x3d, 0xaa, 0xd3, 0x13, 0x00 };
	struct ef_x86 x = decode(lea, sizeof(lea), 0x44f597);
	cr_expect_eq(x.len, 7);
	cr_expect(x.rip && x.w && x.map == 0 && x.op == 0x8d && x.reg == 7);
	cr_expect_eq(x.target, 0x58c948);
	/* 442b9d: cmpl $0xffffffff,0x13da68(%rip)  # runtime.epfd: the
	 * immediate after the displacement counts in the next address */
	static const uint8_t cmp[] = { 0x83, 0x3d, 0x68, 0xda, 0x13, 0x00, 0xff };
	x = decode(cmp, sizeof(cmp), 0x442b9d);
	cr_expect_eq(x.len, 7);
	cr_expect(x.rip && !x.w && x.op == 0x83 && (x.reg & 7) == 7 && x.imm == -1);
	cr_expect_eq(x.target, 0x58060c);
}

Test(x86, plain_register_operands_and_their_absence)
{
	/* 44f59e: xchg %rsi,(%rdi) */
	static const uint8_t xchg[] = { 0x48, 0x87, 0x37 };
	struct ef_x86 x = decode(xchg, sizeof(xchg), 0);
	cr_expect(x.len == 3 && x.w && x.op == 0x87 && x.base == 7 && x.reg == 6 && !x.rip);
	/* xchg %rax,(%r12): r12 needs a SIB byte; still [base] alone */
	static const uint8_t r12[] = { 0x49, 0x87, 0x04, 0x24 };
	x = decode(r12, sizeof(r12), 0);
	cr_expect(x.len == 4 && x.base == 12);
	/* 44efb1: mov %fs:0xfffffffffffffff8,%r14: a SIB with no base */
	static const uint8_t tls[] = { 0x64, 0x4c, 0x8b, 0x34, 0x25, 0xf8, 0xff, 0xff, 0xff };
	x = decode(tls, sizeof(tls), 0);
	cr_expect(x.len == 9 && x.base == -1 && x.reg == 14 && !x.rip);
	/* mov 0x8(%rdi),%rax: a displacement is no plain [base] */
	static const uint8_t disp[] = { 0x48, 0x8b, 0x47, 0x08 };
	x = decode(disp, sizeof(disp), 0);
	cr_expect(x.len == 4 && x.base == -1);
}

Test(x86, lengths_of_vex_evex_and_immediates)
{
	static const struct {
		uint8_t b[15];
		unsigned len;
	} cases[] = {
		{ { 0xc5, 0xfe, 0x6f, 0x66, 0x20 }, 5 },	      /* vmovdqu 0x20(%rsi),%ymm4 */
		{ { 0xc4, 0xe2, 0xe1, 0xf7, 0xf6 }, 5 },	      /* shlx %rbx,%rsi,%rsi */
		{ { 0xc5, 0xf8, 0x77 }, 3 },			      /* vzeroupper */
		{ { 0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x05, 0x56, 0x3e, 0x0c, 0x00 }, 10 }, /* vmovdqu64 x(%rip),%zmm0 */
		{ { 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8 }, 10 },      /* movabs $imm64,%rax */
		{ { 0x66, 0x81, 0xf9, 0x34, 0x12 }, 5 },	      /* cmp $0x1234,%cx */
		{ { 0xf7, 0xc1, 1, 0, 0, 0 }, 6 },		      /* test $1,%ecx */
		{ { 0xf7, 0xd9 }, 2 },				      /* neg %ecx: no immediate */
		{ { 0x0f, 0x1f, 0x44, 0x00, 0x00 }, 5 },	      /* nopl 0x0(%rax,%rax,1) */
		{ { 0x66, 0x0f, 0x3a, 0x0f, 0xc1, 0x08 }, 6 },	      /* palignr $8,%xmm1,%xmm0 */
		{ { 0x0f, 0x84, 0x10, 0x00, 0x00, 0x00 }, 6 },	      /* je rel32 */
		{ { 0xe8, 0x00, 0x00, 0x00, 0x00 }, 5 },	      /* call rel32 */
		{ { 0xcc }, 1 },				      /* int3: Go's padding */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ef_x86 x = decode(cases[i].b, sizeof(cases[i].b), 0);
		cr_expect_eq(x.len, cases[i].len, "case %zu: %u bytes, not %u", i, x.len, cases[i].len);
	}
}

Test(x86, refuses_what_it_does_not_know_and_truncated_bytes)
{
	struct ef_x86 x;
	static const uint8_t addr32[] = { 0x67, 0x8b, 0x00 };	   /* an address-size prefix */
	static const uint8_t bad[] = { 0x06 };			   /* push %es: invalid in 64-bit mode */
	static const uint8_t rex_rex[] = { 0x48, 0x48, 0x8b, 0x00 };
	static const uint8_t vex_66[] = { 0x66, 0xc5, 0xf8, 0x77 };
	static const uint8_t branch16[] = { 0x66, 0xe8, 0x00, 0x00 }; /* Intel and AMD disagree */
	static const uint8_t lea[] = { 0x48, 0x8d, 0x3d, 0xaa, 0xd3, 0x13, 0x00 };
	static const uint8_t long_[16] = { 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
					   0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90 };
	cr_expect_eq(ef_x86_decode(addr32, sizeof(addr32), 0, &x), -1);
	cr_expect_eq(ef_x86_decode(bad, sizeof(bad), 0, &x), -1);
	cr_expect_eq(ef_x86_decode(rex_rex, sizeof(rex_rex), 0, &x), -1);
	cr_expect_eq(ef_x86_decode(vex_66, sizeof(vex_66), 0, &x), -1);
	cr_expect_eq(ef_x86_decode(branch16, sizeof(branch16), 0, &x), -1);
	cr_expect_eq(ef_x86_decode(long_, sizeof(long_), 0, &x), -1, "longer than 15 bytes");
	for (size_t n = 0; n < sizeof(lea); n++)
		cr_expect_eq(ef_x86_decode(lea, n, 0, &x), -1, "%zu bytes of 7", n);
}
