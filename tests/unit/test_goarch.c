/* Which Go programs the command serves, by machine and by who serves them
 * (src/cmd/gobinary/goarch.c): a command serves only programs of its own
 * machine; its supervisor on x86-64 and aarch64, whose system call numbers
 * its seccomp filter knows, its agent on the same two, whose registers its
 * BPF programs read. Every other pair is refused with its reason, never
 * served. */
#include <criterion/criterion.h>
#include <elf.h>

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

Test(goarch, x86_64_programs_by_an_x86_64_command_are_served_by_both)
{
	for (size_t s = 0; s < 2; s++) {
		cr_expect_str_eq(refusal(servers[s], EM_X86_64, EM_X86_64), "");
		cr_expect_str_eq(refusal(servers[s], EM_AARCH64, EM_X86_64),
				 "built for aarch64; this command serves x86-64 programs");
		cr_expect_str_eq(refusal(servers[s], EM_RISCV, EM_X86_64),
				 "built for riscv64; this command serves x86-64 programs");
		cr_expect_str_eq(refusal(servers[s], 4242, EM_X86_64),
				 "built for ELF machine 4242; this command serves x86-64 programs");
	}
}

Test(goarch, aarch64_programs_by_an_aarch64_command_are_served_by_both)
{
	for (size_t s = 0; s < 2; s++) {
		cr_expect_str_eq(refusal(servers[s], EM_AARCH64, EM_AARCH64), "");
		cr_expect_str_eq(refusal(servers[s], EM_X86_64, EM_AARCH64),
				 "built for x86-64; this command serves aarch64 programs");
		cr_expect_str_eq(refusal(servers[s], EM_RISCV, EM_AARCH64),
				 "built for riscv64; this command serves aarch64 programs");
		cr_expect_str_eq(refusal(servers[s], 0, EM_AARCH64),
				 "built for ELF machine 0; this command serves aarch64 programs");
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
