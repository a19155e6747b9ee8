/* What the Go supervisor and the agent need to know of a Go executable, read
 * from its file only (doc/go.md): the Go release, from the build
 * information, and the link-time addresses of the runtime's variables they
 * read or name, from .symtab, or in a stripped binary from the code that
 * uses them (gocode.h). Everything else they read is checked where it is
 * read. */
#ifndef EPOLLFIX_GOIMAGE_H
#define EPOLLFIX_GOIMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "goarch.h"

/* The releases whose runtime sources were read (doc/go.md: 1.19.8, 1.20.14,
 * 1.21.0, 1.22.12, 1.23.0, 1.24.0, 1.25.0, 1.26.8, 1.27.3; the tests build
 * with 1.19 (Debian 12's), 1.20, 1.22, 1.26 and 1.27): sched.lastpoll at
 * offset 8 and sched.pollUntil at 16 of runtime.schedt, the netpoller's
 * epoll_pwait(runtime.epfd, ..., 1, NULL) for a delay under 1 ms, and the
 * wake-up item, registered EPOLLIN, whose data is the address of
 * runtime.netpollBreakRd (a pipe: up to 1.22) or
 * runtime.netpollEventFd (an eventfd: 1.23 to 1.26), or 0 (1.27: a nil
 * tagged pointer; the variable is still netpollEventFd).
 *
 * From EF_GO_CODE_FROM on, whatever the release, the layout is taken from the
 * runtime's code (gocode.h) even when .symtab is there, and .symtab must
 * agree with it: a later release is served when its code reads as one of
 * these, and refused, saying what did not, when it does not. Wherever the
 * function table is read, its format must be the release's: Go 1.18's and
 * 1.19's (magic 0xfffffff0) up to 1.19, 1.20's (0xfffffff1) from 1.20
 * (gopclntab.h). Before 1.19 no runtime was read (and before 1.18 the table
 * has another format still, and the build information no inline version). */
#define EF_GO_MINOR_MIN 19
#define EF_GO_MINOR_READ 27 /* the newest release read */
#define EF_GO_CODE_FROM 27
#define EF_GO_SCHED_LASTPOLL 8
#define EF_GO_SCHED_POLLUNTIL 16
/* What the refusals name. */
#define EF_GO_SERVED "served: Go 1.19 to 1.27, and later releases whose runtime code reads as 1.27's"

enum ef_go_why {
	EF_GO_OK,
	EF_GO_NOT_ELF,
	EF_GO_NOT_GO,
	EF_GO_STRIPPED,
	EF_GO_NO_VERSION,
	EF_GO_UNKNOWN_RELEASE,
	EF_GO_NO_SYMBOLS,
	EF_GO_TOO_COSTLY, /* its reading passed EF_GO_READ_BYTES or EF_GO_READ_CPU_MS, or was stopped */
	EF_GO_OTHER_ARCH, /* a Go program this command does not serve, by machine (goarch.h) */
	EF_GO_WHY_COUNT
};

struct ef_go_image {
	char version[80]; /* "go1.22.12", "devel go1.27-abc...", "go1.26.8 X:nodwarf5": printable ASCII only */
	int minor;
	unsigned machine;      /* e_machine: EM_X86_64, EM_AARCH64... */
	int pie;               /* ET_DYN: addresses move by the load bias */
	uint64_t first_vaddr;  /* the lowest PT_LOAD's address and offset */
	uint64_t first_offset;
	uint64_t sched, epfd, wake; /* link-time addresses */
	int wake_eventfd;      /* wake is runtime.netpollEventFd */
	int nil_tag;           /* the wake-up item's data is 0 (1.27), not wake's address */
	int from_code;         /* the addresses were read from the code (stripped, or 1.27 on) */
	char says[320];        /* why, in a few words (ef_go_image_says) */
};

/* The data of the runtime's wake-up item in the epoll set of a process
 * running img at bias. */
uint64_t ef_go_wake_tag(const struct ef_go_image *img, uint64_t bias);

/* What one executable's reading may cost at most, in work: bytes read and
 * the reader's CPU time, never wall time (a slow disk, a cold page cache or
 * a loaded machine make a reading slower, not costlier: Debian's prometheus,
 * 50 MB, takes 10-20 ms of CPU however long its reads wait). A real Go
 * binary's costs a few MiB and milliseconds (Go 1.26's own 26 MB compiler:
 * 1.9 MiB and 3 ms from .symtab, 4.7 MiB and 7 ms from its code, here); a
 * forged one (a sparse file of gigabytes, a table as large as the file)
 * stops at these. */
#define EF_GO_READ_BYTES (256u << 20)
#define EF_GO_READ_CPU_MS 500

/* EPOLLFIX_GO_TEST_SLOW=N, for tests only (doc/testing.md): the machine is
 * an emulated one, N times slower than the machines these bounds were set
 * for (1 to 1000; 1 when unset or out of range). The reading's CPU budget
 * and the supervisor's time limits (gosup.c) are then N times longer, so
 * that they still bound only what they are for: under qemu's emulation on a
 * loaded host a real arm64 binary's reading takes 0.5-0.9 s of the guest's
 * CPU, and an answerer some milliseconds a notification. */
unsigned ef_go_test_slow(void);

/* Reads the executable open at fd (another process's file: hostile input,
 * every length bounded, the whole reading within EF_GO_READ_BYTES and
 * EF_GO_READ_CPU_MS) for server. EF_GO_OK, or why server cannot act on it;
 * img->version is filled whenever the release could be read. A Go program
 * of a machine server does not serve in this command (goarch.h) is
 * EF_GO_OTHER_ARCH, its runtime not read further. */
enum ef_go_why ef_go_image_read(int fd, enum ef_go_server server, struct ef_go_image *img);

/* The same, ended at once (EF_GO_TOO_COSTLY) when stop, if not NULL, returns
 * nonzero: the agent's pending SIGTERM. */
enum ef_go_why ef_go_image_read_until(int fd, enum ef_go_server server, struct ef_go_image *img,
				      int (*stop)(void));


/* What ef_go_image_read found, in a few words: ef_go_why_text(why), or more
 * for a stripped binary (where its addresses came from, or why none did). */
const char *ef_go_image_says(const struct ef_go_image *img, enum ef_go_why why);

/* `epollfix go-image [--code] PROGRAM`, for tests: its release, where its
 * addresses come from and the addresses, one line; with --code, from the
 * code even when .symtab has them, which the tests compare. A program of a
 * machine this command's supervisor does not serve is read all the same,
 * its line ending with why it is not served. 1 and the reason when there
 * are none. Not documented for users. */
int ef_go_image_main(int argc, char **argv);

/* The load bias of process pid running img (its executable's inode ino):
 * where the mapping of the first PT_LOAD starts, less that segment's
 * page-aligned address. 0 and *bias set, or -1. */
int ef_go_load_bias(long pid, uint64_t ino, const struct ef_go_image *img, uint64_t *bias);

/* A few words for why (for --check, the status and the warning line). */
const char *ef_go_why_text(enum ef_go_why why);

#endif
