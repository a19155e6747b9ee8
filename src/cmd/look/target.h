/* What the epollfix command learns from an ELF file without running it: where
 * a section is (the status block of a libepollfix), its build id, and whether
 * a program can be reached by LD_PRELOAD at all (`epollfix --check PROGRAM`
 * and the warning before `epollfix -- PROGRAM`). */
#ifndef EPOLLFIX_TARGET_H
#define EPOLLFIX_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "fmt.h"

/* What reading one file may cost: bytes, the reading thread's CPU time, and
 * the caller's reason to stop at once (a signal it must act on). Another
 * process's file is hostile input: a sparse file of gigabytes costs its owner
 * nothing to make, and whoever reads it whole the work it takes. The bounds
 * are of work, never of the wall clock: a real program on a slow disk or a
 * loaded machine reads whole, only slower (a file that never answers is the
 * caller's to isolate: the agent reads in a child, agent_reader.h). A read
 * past any bound fails and sets spent; the reading then ends as on a short
 * file. */
struct ef_budget {
	uint64_t bytes;	   /* left to read */
	uint64_t cpu_ns;   /* CLOCK_THREAD_CPUTIME_ID it may reach; 0: none */
	int (*stop)(void); /* NULL, or nonzero when the reader must stop now */
	int spent;	   /* a read was refused by one of the above */
};

/* A budget of bytes and of cpu_ms of this thread's CPU from now, with stop
 * (or NULL). */
void ef_budget_init(struct ef_budget *b, uint64_t bytes, unsigned cpu_ms, int (*stop)(void));

struct ef_file {
	int fd;
	struct ef_budget *budget; /* NULL: reads are unbounded (ef_file_open's) */
	int is64;
	uint64_t phoff, shoff;
	unsigned phnum, shnum, shstrndx, phentsize, shentsize;
	unsigned type; /* e_type: ET_EXEC, ET_DYN (PIE) */
	unsigned machine; /* e_machine: EM_X86_64, EM_AARCH64... */
};

/* 0 when fd is an ELF file of this machine's byte order (of any machine:
 * e->machine says which); -1 otherwise. */
int ef_file_open(int fd, struct ef_file *e);

/* 1 when the file has a PT_INTERP: a dynamic loader runs for it. */
int ef_file_interp(const struct ef_file *e);

/* The section called name: 0 and its file offset, address and size; -1 when
 * there is none (or no section headers). */
int ef_file_section(const struct ef_file *e, const char *name, uint64_t *offset, uint64_t *addr,
		   uint64_t *size);

/* The NT_GNU_BUILD_ID note's bytes: their number (at most cap), or 0. */
size_t ef_file_build_id(const struct ef_file *e, uint8_t *id, size_t cap);
/* The first note of this owner and type in a PT_NOTE segment: its
 * descriptor's length (its bytes copied up to cap), or -1. */
long ef_file_note(const struct ef_file *e, const char *owner, uint32_t type, uint8_t *desc, size_t cap);

/* The address (p_vaddr) at which file offset off is loaded, from PT_LOAD. */
int ef_file_vaddr_of(const struct ef_file *e, uint64_t off, uint64_t *vaddr);

/* The .dynsym symbol that holds vaddr (as dladdr(3) finds it): 0, its name and
 * its address; -1 when none does. */
int ef_file_dynsym_at(const struct ef_file *e, uint64_t vaddr, char *name, size_t size,
		     uint64_t *value);

/* The values of the .symtab symbols named in names[0..n) (each shorter than
 * 64 bytes) into values (0 for one not found). Both tables are read a window
 * at a time, in memory of a few KiB whatever their size; a .symtab of more
 * than EF_MAX_SYMTAB entries or a .strtab over EF_MAX_STRTAB bytes is
 * refused (-1), as is a malformed one. Returns the number of names found, or
 * -1 when there is no .symtab (stripped). */
#define EF_MAX_SYMTAB (1u << 21) /* a 100 MB Go binary has about 200,000 symbols */
#define EF_MAX_STRTAB (64u << 20) /* and about 15 MB of their names */
int ef_file_symbols(const struct ef_file *e, const char *const *names, uint64_t *values, size_t n);

/* The lowest PT_LOAD's p_vaddr and its file offset: where the mapping of file
 * offset 0 lands, less the load bias. -1 without a PT_LOAD. */
int ef_file_first_load(const struct ef_file *e, uint64_t *vaddr, uint64_t *offset);

/* A PT_LOAD segment: where its file bytes are, where they load, and its
 * permissions (PF_X, PF_W, PF_R). */
struct ef_load {
	uint64_t vaddr, offset, filesz, memsz;
	unsigned flags;
};

/* The file's PT_LOAD segments, up to cap of them, into out: their number.
 * Only segments whose file bytes lie inside the file and whose addresses do
 * not wrap are given (the file is another process's: hostile). */
unsigned ef_file_loads(const struct ef_file *e, struct ef_load *out, unsigned cap);

/* Reads size bytes at file offset off: 0, or -1 when short or past the
 * budget. */
int ef_file_read(const struct ef_file *e, void *buf, size_t size, uint64_t off);

/* PROGRAM resolved through PATH as execvp does, into out. 0, or -1 (not found). */
int ef_resolve_program(const char *program, char *out, size_t size);

/* Why libepollfix cannot act, or acts only in part, in the program at path: one
 * line per reason, each "PATH is ...\n", appended to out. A script's `#!`
 * interpreter is followed one level (through /usr/bin/env as well). Reads the
 * files only: nothing is run. Returns the number of lines. */
int ef_target_reasons(const char *path, const char *go, int supervised, struct ef_buf *out);

/* The C library the program at path is linked against, from its ELF
 * interpreter (PT_INTERP: ld-musl-* is musl's loader, any other glibc's); a
 * script's `#!` interpreter's, one level. */
enum ef_libc {
	EF_LIBC_UNKNOWN, /* not an ELF file, or unreadable */
	EF_LIBC_STATIC,	 /* no interpreter: no loader reads LD_PRELOAD */
	EF_LIBC_GLIBC,
	EF_LIBC_MUSL,
};
enum ef_libc ef_target_libc(const char *path);

/* `epollfix --check PROGRAM` (warn 0: "program:" lines on stdout) or the
 * warning before `epollfix -- PROGRAM` runs (warn 1: stderr). PROGRAM is
 * resolved as execvp would. The number of reasons, or -1 when not found.
 * go: for a Go program, the line of what the command does with it
 * (gosup.h's ef_go_plan: "is a Go program ...\n") instead of the
 * preload's, or NULL; supervised: that line is no reason, only news, and
 * "" prints nothing. */
int ef_target_check(const char *program, int warn, const char *go, int supervised);

#endif
