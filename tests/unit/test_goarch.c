/* Which Go programs the command serves, by machine (src/cmd/gobinary/goarch.c):
 * only x86-64 programs, and only by a command built for x86-64, whose
 * seccomp filter and BPF programs know x86-64's numbers and registers. Every
 * other pair is refused with its reason, never served. */
#include <criterion/criterion.h>
#include <elf.h>

#include "goarch.h"

static const char *refusal(unsigned program, unsigned command)
{
	static char text[200];
	struct ef_buf b = EF_BUF(text);
	text[0] = '\0';
	cr_assert_eq(ef_go_arch_refuses(program, command, &b), *text ? 1 : 0);
	return text;
}

Test(goarch, only_x86_64_programs_by_an_x86_64_command_are_served)
{
	cr_expect_str_eq(refusal(EM_X86_64, EM_X86_64), "");
	cr_expect_str_eq(refusal(EM_AARCH64, EM_X86_64), "built for aarch64; this command serves x86-64 programs");
	cr_expect_str_eq(refusal(EM_RISCV, EM_X86_64), "built for riscv64; this command serves x86-64 programs");
	cr_expect_str_eq(refusal(4242, EM_X86_64), "built for ELF machine 4242; this command serves x86-64 programs");
}

Test(goarch, a_command_built_for_another_architecture_serves_none)
{
	static const unsigned programs[] = { EM_X86_64, EM_AARCH64, EM_RISCV, 0, 4242 };
	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++) {
		cr_expect_str_eq(refusal(programs[i], EM_AARCH64),
				 "not served on aarch64 (the supervisor's filter and the agent's BPF programs are "
				 "x86-64 only)");
		cr_expect_str_eq(refusal(programs[i], EM_NONE),
				 "not served on this architecture (the supervisor's filter and the agent's BPF "
				 "programs are x86-64 only)");
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
	cr_expect_eq(ef_go_arch_refused(EM_AARCH64, &b), 1);
	cr_expect_eq(ef_go_arch_refused(EM_X86_64, &b), EF_GO_COMMAND_MACHINE == EM_X86_64 ? 0 : 1);
}
