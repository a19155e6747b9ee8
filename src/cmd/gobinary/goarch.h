/* Which Go programs this command serves, by the ELF machine of the program,
 * the architecture the command was built for, and who serves it: the one
 * place that decides it, asked (through goimage.h's readings) by the
 * launcher, the supervisor, `--check` and the agent alike. A command serves
 * only programs of its own machine (one run under emulation, binfmt_misc or
 * qemu-user, makes the emulator's system calls, and its memory is not where
 * its file says); the supervisor on the machines whose system call numbers
 * its seccomp filter knows (goabi.h: x86-64, aarch64), the agent on those
 * whose registers its BPF programs read (netpoll.bpf.c: x86-64, aarch64).
 * A program refused is refused with its reason and runs as without
 * epollfix. */
#ifndef EPOLLFIX_GOARCH_H
#define EPOLLFIX_GOARCH_H

#include <elf.h>

#include "fmt.h"

/* The ELF machine the command was built for (little-endian: Go has no
 * big-endian arm64, and the filter reads arguments' low words first). */
#if defined(__x86_64__) && !defined(__ILP32__)
#define EF_GO_COMMAND_MACHINE EM_X86_64
#elif defined(__aarch64__) && !defined(__AARCH64EB__)
#define EF_GO_COMMAND_MACHINE EM_AARCH64
#else
#define EF_GO_COMMAND_MACHINE EM_NONE
#endif

/* Who would serve the program. */
enum ef_go_server {
	EF_GO_SUPERVISOR, /* the seccomp filter and its supervisor (golaunch.c, gosup.c) */
	EF_GO_AGENT,      /* the agent's BPF programs (agent/, bpf/) */
};

/* 0 when server, in a command built for the ELF machine command, serves the
 * Go programs of the ELF machine program; 1 and why not, a few words, into
 * out, when it does not. Pure: the unit tests ask it of every pair. */
int ef_go_arch_refuses(enum ef_go_server server, unsigned program, unsigned command, struct ef_buf *out);

/* The same for this command. */
int ef_go_arch_refused(enum ef_go_server server, unsigned program, struct ef_buf *out);

/* The name of an ELF machine, as the refusals say it ("x86-64",
 * "aarch64"), or NULL for one without a name here. */
const char *ef_go_arch_name(unsigned machine);

#endif
