/* ef-capbset: runs a command with only the named capabilities left in the
 * bounding set, as systemd's CapabilityBoundingSet= does (root then keeps
 * those alone across the exec); for the arm64 guests, whose userland has no
 * setpriv (tests/kernels/arm64-agent).
 *
 *   ef-capbset "CAP_BPF CAP_PERFMON ..." COMMAND [ARG]...
 *
 * Exit 2 on a capability it does not know or a bounding set it cannot
 * change; else the command's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Those epollfix-agent.service names, and a few more, by their numbers
 * (linux/capability.h's, the kernel's ABI: the musl build has no kernel
 * headers). The others are dropped up to /proc/sys/kernel/cap_last_cap. */
static const struct {
	const char *name;
	int cap;
} known[] = {
	{ "CAP_DAC_READ_SEARCH", 2 }, { "CAP_KILL", 5 },     { "CAP_NET_ADMIN", 12 },
	{ "CAP_IPC_LOCK", 14 },	      { "CAP_SYS_PTRACE", 19 }, { "CAP_SYS_ADMIN", 21 },
	{ "CAP_SYS_RESOURCE", 24 },   { "CAP_PERFMON", 38 },   { "CAP_BPF", 39 },
};

int main(int argc, char **argv)
{
	unsigned long long keep = 0;
	char *names, *tok, *save = NULL;
	int last = 40;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: ef-capbset \"CAP_A CAP_B ...\" COMMAND [ARG]...\n");
		return 2;
	}
	names = strdup(argv[1]);
	for (tok = strtok_r(names, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
		size_t i;
		for (i = 0; i < sizeof(known) / sizeof(known[0]) && strcmp(known[i].name, tok) != 0; i++)
			;
		if (i == sizeof(known) / sizeof(known[0])) {
			fprintf(stderr, "ef-capbset: %s: not known here\n", tok);
			return 2;
		}
		keep |= 1ULL << known[i].cap;
	}
	f = fopen("/proc/sys/kernel/cap_last_cap", "r");
	if (f) {
		if (fscanf(f, "%d", &last) != 1)
			last = 40;
		fclose(f);
	}
	for (int c = 0; c <= last && c < 64; c++) {
		if (!(keep & (1ULL << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) {
			perror("ef-capbset: PR_CAPBSET_DROP");
			return 2;
		}
	}
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 2;
}
