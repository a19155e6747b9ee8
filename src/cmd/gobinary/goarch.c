/* Which Go programs this command serves, by machine (goarch.h). */
#include "goarch.h"

#include "goabi.h"

#ifndef EM_LOONGARCH
#define EM_LOONGARCH 258 /* newer than some libc headers */
#endif

const char *ef_go_arch_name(unsigned machine)
{
	switch (machine) {
	case EM_X86_64:
		return "x86-64";
	case EM_AARCH64:
		return "aarch64";
	case EM_RISCV:
		return "riscv64";
	case EM_PPC64:
		return "ppc64";
	case EM_S390:
		return "s390x";
	case EM_LOONGARCH:
		return "loongarch64";
	case EM_MIPS:
		return "mips64";
	default:
		return NULL;
	}
}

static void name(struct ef_buf *out, unsigned machine)
{
	const char *n = ef_go_arch_name(machine);
	if (n)
		ef_fmt(out, "%s", n);
	else
		ef_fmt(out, "ELF machine %u", machine);
}

/* The machines each server knows, its command built for the same: the
 * supervisor's filter traps their system call numbers (goabi.h); the
 * agent's BPF programs read their registers (netpoll.bpf.c: each one's
 * struct pt_regs and epoll_pwait's number, built for the command's machine),
 * and what else the agent takes from a program is either machine's alike
 * (goimage.c's addresses, read from x86-64's or arm64's code; the runtime's
 * sched and epoll items, the same words on both). The same two for both
 * servers today, each named: a machine is added to one when its own part
 * knows it. */
static int knows(enum ef_go_server server, unsigned machine)
{
	switch (server) {
	case EF_GO_SUPERVISOR: /* goabi.h's system call numbers */
	case EF_GO_AGENT:      /* netpoll.bpf.c's registers */
		return machine == EM_X86_64 || machine == EM_AARCH64;
	}
	return 0;
}

/* The supervisor of a machine known above has that machine's numbers. */
_Static_assert(EF_GO_COMMAND_MACHINE == EF_GO_SUP_MACHINE ||
		       (EF_GO_COMMAND_MACHINE != EM_X86_64 && EF_GO_COMMAND_MACHINE != EM_AARCH64),
	       "goabi.h has no system call numbers for the machine the supervisor serves");

int ef_go_arch_refuses(enum ef_go_server server, unsigned program, unsigned command, struct ef_buf *out)
{
	if (knows(server, command) && program == command)
		return 0;
	if (knows(server, command)) {
		ef_fmt(out, "%s", "built for ");
		name(out, program);
		ef_fmt(out, "%s", "; this command serves ");
		name(out, command);
		ef_fmt(out, "%s", " programs");
		return 1;
	}
	ef_fmt(out, "%s", "not served on ");
	if (command == EM_NONE)
		ef_fmt(out, "%s", "this architecture");
	else
		name(out, command);
	ef_fmt(out, "%s", server == EF_GO_SUPERVISOR ? " (the supervisor's filter is x86-64 and aarch64 only)"
						      : " (the agent's BPF programs are x86-64 and aarch64 only)");
	return 1;
}

int ef_go_arch_refused(enum ef_go_server server, unsigned program, struct ef_buf *out)
{
	return ef_go_arch_refuses(server, program, EF_GO_COMMAND_MACHINE, out);
}
