/* Which Go programs this command serves, by the ELF machine of the program
 * and the architecture the command was built for: the one place that
 * decides it, asked (through goimage.h's readings) by the launcher, the
 * supervisor, `--check` and the agent alike. Served is what the supervisor's
 * seccomp filter traps (x86-64's architecture and numbers, golaunch.c) and
 * the agent's BPF programs read (x86-64's registers): a Go program of
 * another machine, or any Go program when the command runs on another
 * architecture, is refused with its reason and runs as without epollfix. */
#ifndef EPOLLFIX_GOARCH_H
#define EPOLLFIX_GOARCH_H

#include <elf.h>

#include "fmt.h"

/* The ELF machine the command was built for. */
#if defined(__x86_64__) && !defined(__ILP32__)
#define EF_GO_COMMAND_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define EF_GO_COMMAND_MACHINE EM_AARCH64
#else
#define EF_GO_COMMAND_MACHINE EM_NONE
#endif

/* 0 when a command built for the ELF machine command serves the Go programs
 * of the ELF machine program; 1 and why not, a few words, into out, when it
 * does not. Pure: the unit tests ask it of every pair. */
int ef_go_arch_refuses(unsigned program, unsigned command, struct ef_buf *out);

/* The same for this command. */
int ef_go_arch_refused(unsigned program, struct ef_buf *out);

/* The name of an ELF machine, as the refusals say it ("x86-64",
 * "aarch64"), or NULL for one without a name here. */
const char *ef_go_arch_name(unsigned machine);

#endif
