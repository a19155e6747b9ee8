/* libFuzzer target for the AArch64 classifier the stripped-binary reader
 * walks Go's arm64 runtime with (src/cmd/gobinary/arm64.c): any bytes,
 * decoded a word at a time. Every word decodes; what it names stays in
 * range: registers 0-31, no register written or used beyond x30, sizes of
 * 1 to 8 bytes, a branch's target a whole number of words away. */
#include <stdint.h>
#include <stdlib.h>

#include "arm64.h"
#include "hostile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p = hostile_copy(data, &size);
	for (size_t at = 0; at + 4 <= size; at += 4) {
		struct ef_a64 x;
		uint64_t ip = 0x400000 + at;
		ef_a64_decode(p + at, ip, &x);
		check(x.rd < 32 && x.rn < 32 && x.rt < 32 && x.rm < 32);
		check(!(x.writes >> 31) && !(x.uses >> 31));
		check(x.kind <= EF_A64_STOP);
		if (x.kind == EF_A64_LOAD || x.kind == EF_A64_STORE || x.kind == EF_A64_STLR ||
		    x.kind == EF_A64_SWP)
			check(x.size == 1 || x.size == 2 || x.size == 4 || x.size == 8);
		if (x.kind == EF_A64_BRANCH || x.kind == EF_A64_CALL)
			check((x.target - ip) % 4 == 0);
		if (x.kind == EF_A64_ADRP)
			check((x.target & 0xfff) == 0);
	}
	free(p);
	return 0;
}
