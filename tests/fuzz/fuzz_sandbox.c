/* libFuzzer target for the reading of seccomp filters: any bytes as a
 * classic-BPF program, and as /proc/self/status text fed in chunks. The
 * reading must end, stay inside the program and seccomp_data, and answer a
 * mask of known bits; the scan must find only a whole "Seccomp:" field. */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

#define CHECK(x)                  \
	do {                      \
		if (!(x))         \
			abort();  \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = size / sizeof(struct ef_bpf_insn);
	if (n > 64)
		n = 64;
	/* An exact-size copy, so AddressSanitizer sees any read past the end. */
	struct ef_bpf_insn *prog = malloc(n ? n * sizeof(*prog) : 1);
	memcpy(prog, data, n * sizeof(*prog));
	struct ef_bpf_prog fp = { (unsigned short)n, prog };
	int why = 0;
	unsigned denied = ef_sandbox_verdict(&fp, 1000, &why);
	CHECK((denied & ~(unsigned)EF_DENY_ALL) == 0);
	CHECK(why > 0);
	free(prog);

	struct ef_proc_field s;
	char v[8];
	ef_proc_field_init(&s, "Seccomp", v, sizeof(v));
	size_t chunk = size ? data[0] % 16 + 1 : 1;
	for (size_t i = 0; i < size; i += chunk)
		ef_proc_field_feed(&s, (const char *)data + i, i + chunk < size ? chunk : size - i);
	CHECK(s.len < sizeof(v) && v[s.len] == '\0');
	int mode = ef_seccomp_mode_of(&s, 0);
	CHECK(mode >= -1 && mode <= 9);
	if (mode >= 0)
		CHECK(memmem(data, size, "Seccomp:", 8) != NULL);
	return 0;
}
