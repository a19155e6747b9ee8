/* Which Go programs the command serves, by machine and by who serves them
 * (src/cmd/gobinary/goarch.c): a command serves only programs of its own
 * machine; its supervisor on x86-64 and aarch64, whose system call numbers
 * its seccomp filter knows, its agent on the same two, whose registers its
 * BPF programs read. Every other pair is refused with its reason, never
 * served. */
#include <criterion/criterion.h>
#include <elf.h>
#include <stdio.h>

#include "goarch.h"

static const char *refusal(enum ef_go_server server, unsigned program, unsigned command)
{
	static char text[200];
	struct ef_buf b = EF_BUF(text);
	text[0] = '\0';
	cr_assert_eq(ef_go_arch_refuses(server, program, command, &b), *text ? 1 : 0);
	return text;
}

static const enum ef_go_server servers[] = { EF_GO_SUPERVISOR, EF_GO_AGENT };

/* Each machine whose command serves Go programs, and what its refusals name. */
static const struct {
	unsigned machine, other;
	const char *name, *other_name;
} served[] = {
	{ EM_X86_64, EM_AARCH64, "x86-64", "aarch64" },
	{ EM_AARCH64, EM_X86_64, "aarch64", "x86-64" },
};

Test(goarch, a_command_serves_its_own_machines_programs_by_both_servers_and_refuses_others)
{
	char want[200];
	for (size_t m = 0; m < sizeof(served) / sizeof(served[0]); m++)
		for (size_t s = 0; s < 2; s++) {
			unsigned cmd = served[m].machine;
			cr_expect_str_eq(refusal(servers[s], cmd, cmd), "", "%s", served[m].name);
			snprintf(want, sizeof(want), "built for %s; this command serves %s programs",
				 served[m].other_name, served[m].name);
			cr_expect_str_eq(refusal(servers[s], served[m].other, cmd), want);
			snprintf(want, sizeof(want), "built for riscv64; this command serves %s programs",
				 served[m].name);
			cr_expect_str_eq(refusal(servers[s], EM_RISCV, cmd), want);
			snprintf(want, sizeof(want),
				 "built for ELF machine 4242; this command serves %s programs", served[m].name);
			cr_expect_str_eq(refusal(servers[s], 4242, cmd), want);
			snprintf(want, sizeof(want), "built for ELF machine 0; this command serves %s programs",
				 served[m].name);
			cr_expect_str_eq(refusal(servers[s], 0, cmd), want);
		}
}

Test(goarch, a_command_built_for_another_architecture_serves_none)
{
	static const unsigned programs[] = { EM_X86_64, EM_AARCH64, EM_RISCV, 0, 4242 };
	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++) {
		cr_expect_str_eq(refusal(EF_GO_SUPERVISOR, programs[i], EM_RISCV),
				 "not served on riscv64 (the supervisor's filter is x86-64 and aarch64 only)");
		cr_expect_str_eq(refusal(EF_GO_SUPERVISOR, programs[i], EM_NONE),
				 "not served on this architecture (the supervisor's filter is x86-64 and aarch64 "
				 "only)");
		cr_expect_str_eq(refusal(EF_GO_AGENT, programs[i], EM_RISCV),
				 "not served on riscv64 (the agent's BPF programs are x86-64 and aarch64 only)");
		cr_expect_str_eq(refusal(EF_GO_AGENT, programs[i], EM_NONE),
				 "not served on this architecture (the agent's BPF programs are x86-64 and aarch64 "
				 "only)");
	}
}

Test(goarch, this_command_is_built_for_its_compiler_s_target)
{
#if defined(__x86_64__) && !defined(__ILP32__)
	cr_expect_eq(EF_GO_COMMAND_MACHINE, EM_X86_64);
#elif defined(__aarch64__)
	cr_expect_eq(EF_GO_COMMAND_MACHINE, EM_AARCH64);
#endif
	char text[200];
	struct ef_buf b = EF_BUF(text);
	int x86 = EF_GO_COMMAND_MACHINE == EM_X86_64, a64 = EF_GO_COMMAND_MACHINE == EM_AARCH64;
	cr_expect_eq(ef_go_arch_refused(EF_GO_SUPERVISOR, EM_AARCH64, &b), a64 ? 0 : 1);
	cr_expect_eq(ef_go_arch_refused(EF_GO_SUPERVISOR, EM_X86_64, &b), x86 ? 0 : 1);
	cr_expect_eq(ef_go_arch_refused(EF_GO_AGENT, EM_AARCH64, &b), a64 ? 0 : 1);
	cr_expect_eq(ef_go_arch_refused(EF_GO_AGENT, EM_X86_64, &b), x86 ? 0 : 1);
}
