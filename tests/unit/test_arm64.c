/* The AArch64 classifier the stripped-binary reader walks Go's arm64 runtime
 * with (src/cmd/gobinary/arm64.c): instructions taken from Go 1.19.8's,
 * 1.26.8's and 1.27.3's arm64 runtimes (objdump's reading beside each), and
 * that whatever it does not know is taken as writing every register. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "arm64.h"

static struct ef_a64 decode(uint32_t w, uint64_t ip)
{
	uint8_t p[4] = { (uint8_t)w, (uint8_t)(w >> 8), (uint8_t)(w >> 16), (uint8_t)(w >> 24) };
	struct ef_a64 x;
	ef_a64_decode(p, ip, &x);
	return x;
}

#define ALL 0x7fffffffu

Test(arm64, adrp_then_a_load_a_store_or_an_add_name_the_variable)
{
	/* 4eed0: adrp x27, 190000; 4eed4: ldrsw x6, [x27, #1548]; cmn w6, #0x1 */
	struct ef_a64 x = decode(0xd0000a1b, 0x4eed0);
	cr_expect(x.kind == EF_A64_ADRP && x.rd == 27 && x.target == 0x190000 && x.writes == 1u << 27);
	x = decode(0xb9860f66, 0x4eed4);
	cr_expect(x.kind == EF_A64_LOAD && x.size == 4 && x.rn == 27 && x.rt == 6 && x.imm == 1548);
	cr_expect(x.writes == 1u << 6 && x.uses == 0);
	x = decode(0x310004df, 0x4eed8);
	cr_expect(x.kind == EF_A64_CMN1 && x.rn == 6 && !x.sf && x.writes == 0);
	/* 4d874: str w0, [x27, #1640] (runtime.epfd, Go 1.27) */
	x = decode(0xb9066b60, 0x4d874);
	cr_expect(x.kind == EF_A64_STORE && x.size == 4 && x.rn == 27 && x.imm == 1640);
	cr_expect(x.writes == 0 && x.uses == 1u << 0);
	/* Go 1.19's PIE: 3d60c: adrp x8, 197000; add x8, x8, #0x2e0;
	 * cmp x7, x8 (the address taken); ldr x0, [x8] */
	x = decode(0xd0000ac8, 0x3d60c);
	cr_expect(x.kind == EF_A64_ADRP && x.rd == 8 && x.target == 0x197000);
	x = decode(0x910b8108, 0x3d610);
	cr_expect(x.kind == EF_A64_ADD_IMM && x.rd == 8 && x.rn == 8 && x.imm == 0x2e0 && x.uses == 0);
	x = decode(0xeb0800ff, 0x3d614);
	cr_expect(x.kind == EF_A64_OTHER && x.uses == ((1u << 7) | (1u << 8)) && x.writes == 0);
	x = decode(0xf9400100, 0x3d62c);
	cr_expect(x.kind == EF_A64_LOAD && x.size == 8 && x.rn == 8 && x.imm == 0 && x.writes == 1u << 0);
}

Test(arm64, atomic_swaps_and_stores_of_64_bits)
{
	/* 5b5cc: swpal xzr, x6, [x5]; 5b610: stlr x0, [x4]; 4f098: stlr wzr, [x0] */
	struct ef_a64 x = decode(0xf8ff80a6, 0x5b5cc);
	cr_expect(x.kind == EF_A64_SWP && x.size == 8 && x.rn == 5 && x.writes == 1u << 6);
	x = decode(0xc89ffc80, 0x5b610);
	cr_expect(x.kind == EF_A64_STLR && x.size == 8 && x.rn == 4 && x.writes == 0 && x.uses == 1u << 0);
	x = decode(0x889ffc1f, 0x4f098);
	cr_expect(x.kind == EF_A64_STLR && x.size == 4 && x.rn == 0);
}

Test(arm64, zeroes_calls_and_branches)
{
	/* 4d8c0: mov x0, xzr; mov x1, xzr; bl 6e510 <runtime.taggedPointerPack> */
	struct ef_a64 x = decode(0xaa1f03e0, 0x4d8c0);
	cr_expect(x.kind == EF_A64_MOV && x.rd == 0 && x.rm == 31);
	x = decode(0xd2800000, 0);
	cr_expect(x.kind == EF_A64_MOVZ0 && x.rd == 0); /* mov x0, #0 */
	x = decode(0x94008312, 0x4d8c8);
	cr_expect(x.kind == EF_A64_CALL && x.target == 0x6e510 && x.writes == ALL);
	/* 4d83c: b.ls 4d9cc; 4d878: cbnz x1, 4d990; 1109c: tbz x2, #63, 110b0 */
	x = decode(0x54000c89, 0x4d83c);
	cr_expect(x.kind == EF_A64_BRANCH && x.cond && x.target == 0x4d9cc && x.writes == 0);
	x = decode(0xb50008c1, 0x4d878);
	cr_expect(x.kind == EF_A64_BRANCH && x.cond && x.target == 0x4d990);
	x = decode(0xb6f800a2, 0x1109c);
	cr_expect(x.kind == EF_A64_BRANCH && x.cond && x.target == 0x110b0);
	/* 3fca0: b 3fae0 (backwards); ret; udf #0 */
	x = decode(0x17ffff90, 0x3fca0);
	cr_expect(x.kind == EF_A64_BRANCH && !x.cond && x.target == 0x3fae0);
	cr_expect(decode(0xd65f03c0, 0).kind == EF_A64_STOP);
	cr_expect(decode(0x00000000, 0).kind == EF_A64_STOP);
}

Test(arm64, what_it_does_not_know_writes_every_register)
{
	/* svc #0: x0 gets the result */
	cr_expect_eq(decode(0xd4000001, 0).writes, ALL);
	/* an SVE instruction (op0 0010) */
	cr_expect_eq(decode(0x04a00000, 0).writes, ALL);
	/* mrs x0, midr_el1: only x0 */
	cr_expect_eq(decode(0xd5380000, 0).writes, 1u << 0);
	/* stp x0, x1, [sp, #8]: no register written, two values stored */
	struct ef_a64 x = decode(0xa90087e0, 0);
	cr_expect(x.writes == 0 && x.uses == 3);
	/* ldr x16, [x28, #16]: the g's stack bound */
	x = decode(0xf9400b90, 0);
	cr_expect(x.kind == EF_A64_LOAD && x.rn == 28 && x.imm == 16 && x.writes == 1u << 16);
	/* Every word decodes, writing no more than x0-x30. */
	for (uint64_t w = 0; w < (1ull << 32); w += 0x10001)
		cr_assert_eq(decode((uint32_t)w, 0x400000).writes & ~ALL, 0, "%#llx", (unsigned long long)w);
}
