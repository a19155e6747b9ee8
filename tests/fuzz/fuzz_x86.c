/* libFuzzer target for the x86-64 decoder the stripped-binary reader walks
 * Go's runtime with (src/cmd/gobinary/x86.c): any bytes, decoded at every offset. A
 * decoded instruction must stay inside the bytes and 15 bytes, depend on no
 * byte past its end (the same bytes cut at its length decode the same, one
 * fewer does not), and name registers 0-15. */
#include <stdint.h>
#include <stdlib.h>

#include "x86.h"
#include "hostile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p = hostile_copy(data, &size);
	for (size_t at = 0; at < size; at++) {
		struct ef_x86 x, y;
		if (ef_x86_decode(p + at, size - at, 0x400000 + at, &x) != 0)
			continue;
		check(x.len >= 1 && x.len <= 15 && x.len <= size - at);
		check(x.map <= 6 && x.op <= 0xff && x.reg < 16 && x.rm < 16);
		check(x.base >= -1 && x.base < 16 && !(x.rip && x.base >= 0));
		check(!x.rip || (x.modrm && x.mod == 0));
		check(x.imm_len <= 8);
		check(ef_x86_decode(p + at, x.len, 0x400000 + at, &y) == 0 && y.len == x.len &&
		      y.target == x.target && y.imm == x.imm);
		check(ef_x86_decode(p + at, x.len - 1, 0x400000 + at, &y) != 0);
	}
	free(p);
	return 0;
}
