/* Which Go programs this command serves, by machine (goarch.h). */
#include "goarch.h"

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

int ef_go_arch_refuses(unsigned program, unsigned command, struct ef_buf *out)
{
	/* The one pair served: the filter's architecture and system call
	 * numbers, and the BPF programs' registers, are x86-64's. */
	if (command == EM_X86_64 && program == EM_X86_64)
		return 0;
	if (command == EM_X86_64) {
		/* Run there under emulation (binfmt_misc, qemu-user), its system
		 * calls are the emulator's and its memory is not where its file
		 * says. */
		ef_fmt(out, "%s", "built for ");
		name(out, program);
		ef_fmt(out, "%s", "; this command serves x86-64 programs");
		return 1;
	}
	ef_fmt(out, "%s", "not served on ");
	if (command == EM_NONE)
		ef_fmt(out, "%s", "this architecture");
	else
		name(out, command);
	ef_fmt(out, "%s", " (the supervisor's filter and the agent's BPF programs are x86-64 only)");
	return 1;
}

int ef_go_arch_refused(unsigned program, struct ef_buf *out)
{
	return ef_go_arch_refuses(program, EF_GO_COMMAND_MACHINE, out);
}
