/* ELF inspection for the command (target.h). Files are read with pread only:
 * a program is never run, and a library is read through the path the caller
 * opened (for `status`, /proc/PID/map_files or /proc/PID/root). */
#define _GNU_SOURCE
#include "target.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "elfrule.h"
#include "ids.h"

/* More symbols than any real library exports (libc has about 3,000). */
#define MAX_DYNSYM (1u << 20)

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
	return pread(fd, buf, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

/* The CPU time this thread has used: what its reading costs, which a slow
 * disk or a loaded machine does not inflate (a wait for the disk or for a
 * CPU is not counted). */
static uint64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void ef_budget_init(struct ef_budget *b, uint64_t bytes, unsigned cpu_ms, int (*stop)(void))
{
	*b = (struct ef_budget){ .bytes = bytes, .cpu_ns = cpu_ns() + (uint64_t)cpu_ms * 1000000u,
				 .stop = stop };
}

/* Every read of the file goes through here: charged to its budget, if any.
 * Reads are small (a window of 8 KiB, a function's code of at most 64 KiB),
 * so the CPU time and the stop are looked at often enough. */
static int file_read(const struct ef_file *e, void *buf, size_t n, uint64_t off)
{
	struct ef_budget *b = e->budget;
	if (b) {
		if (b->spent || n > b->bytes || (b->cpu_ns && cpu_ns() > b->cpu_ns) ||
		    (b->stop && b->stop())) {
			b->spent = 1;
			return -1;
		}
		b->bytes -= n;
	}
	return read_at(e->fd, buf, n, off);
}

int ef_file_open(int fd, struct ef_file *e)
{
	Elf64_Ehdr h;
	const unsigned char native = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;

	memset(e, 0, sizeof(*e));
	e->fd = fd;
	if (read_at(fd, &h, EI_NIDENT, 0) != 0 || memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 ||
	    h.e_ident[EI_DATA] != native)
		return -1;
	if (h.e_ident[EI_CLASS] == ELFCLASS64) {
		if (read_at(fd, &h, sizeof(h), 0) != 0)
			return -1;
		e->is64 = 1;
		e->type = h.e_type;
		e->machine = h.e_machine;
		e->phoff = h.e_phoff;
		e->shoff = h.e_shoff;
		e->phnum = h.e_phnum;
		e->shnum = h.e_shnum;
		e->shstrndx = h.e_shstrndx;
		e->phentsize = h.e_phentsize;
		e->shentsize = h.e_shentsize;
	} else if (h.e_ident[EI_CLASS] == ELFCLASS32) {
		Elf32_Ehdr h32;
		if (read_at(fd, &h32, sizeof(h32), 0) != 0)
			return -1;
		e->type = h32.e_type;
		e->machine = h32.e_machine;
		e->phoff = h32.e_phoff;
		e->shoff = h32.e_shoff;
		e->phnum = h32.e_phnum;
		e->shnum = h32.e_shnum;
		e->shstrndx = h32.e_shstrndx;
		e->phentsize = h32.e_phentsize;
		e->shentsize = h32.e_shentsize;
	} else {
		return -1;
	}
	if (e->phentsize != (e->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
		e->phnum = 0;
	if (e->shentsize != (e->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr)) ||
	    e->shstrndx >= e->shnum)
		e->shnum = 0;
	return 0;
}

/* Program and section headers, widened to the 64-bit form. */
static int phdr(const struct ef_file *e, unsigned i, Elf64_Phdr *p)
{
	if (e->is64)
		return file_read(e, p, sizeof(*p), e->phoff + (uint64_t)i * e->phentsize);
	Elf32_Phdr q;
	if (file_read(e, &q, sizeof(q), e->phoff + (uint64_t)i * e->phentsize) != 0)
		return -1;
	*p = (Elf64_Phdr){ .p_type = q.p_type, .p_flags = q.p_flags, .p_offset = q.p_offset,
			   .p_vaddr = q.p_vaddr, .p_filesz = q.p_filesz, .p_memsz = q.p_memsz };
	return 0;
}

int ef_file_interp(const struct ef_file *e)
{
	Elf64_Phdr p;
	for (unsigned i = 0; i < e->phnum; i++)
		if (phdr(e, i, &p) == 0 && p.p_type == PT_INTERP)
			return 1;
	return 0;
}

static int shdr(const struct ef_file *e, unsigned i, Elf64_Shdr *s)
{
	if (e->is64)
		return file_read(e, s, sizeof(*s), e->shoff + (uint64_t)i * e->shentsize);
	Elf32_Shdr q;
	if (file_read(e, &q, sizeof(q), e->shoff + (uint64_t)i * e->shentsize) != 0)
		return -1;
	*s = (Elf64_Shdr){ .sh_name = q.sh_name, .sh_type = q.sh_type, .sh_addr = q.sh_addr,
			   .sh_offset = q.sh_offset, .sh_size = q.sh_size };
	return 0;
}

int ef_file_section(const struct ef_file *e, const char *name, uint64_t *offset, uint64_t *addr,
		   uint64_t *size)
{
	Elf64_Shdr names, s;
	size_t len = strlen(name) + 1;
	char buf[64];

	if (len > sizeof(buf) || shdr(e, e->shstrndx, &names) != 0)
		return -1;
	for (unsigned i = 1; i < e->shnum; i++) {
		if (shdr(e, i, &s) != 0 || s.sh_name >= names.sh_size ||
		    s.sh_name + len > names.sh_size ||
		    file_read(e, buf, len, names.sh_offset + s.sh_name) != 0 ||
		    memcmp(buf, name, len) != 0)
			continue;
		*offset = s.sh_offset;
		*addr = s.sh_addr;
		*size = s.sh_type == SHT_NOBITS ? 0 : s.sh_size;
		return 0;
	}
	return -1;
}

unsigned ef_file_loads(const struct ef_file *e, struct ef_load *out, unsigned cap)
{
	Elf64_Phdr p;
	struct stat st;
	unsigned n = 0;
	if (fstat(e->fd, &st) != 0)
		return 0;
	uint64_t size = (uint64_t)st.st_size;
	for (unsigned i = 0; i < e->phnum && n < cap; i++)
		if (phdr(e, i, &p) == 0 && p.p_type == PT_LOAD && p.p_offset <= size &&
		    p.p_filesz <= size - p.p_offset && p.p_filesz <= p.p_memsz &&
		    p.p_vaddr <= UINT64_MAX - p.p_memsz)
			out[n++] = (struct ef_load){ p.p_vaddr, p.p_offset, p.p_filesz, p.p_memsz,
						     p.p_flags };
	return n;
}

int ef_file_read(const struct ef_file *e, void *buf, size_t size, uint64_t off)
{
	return file_read(e, buf, size, off);
}

int ef_file_first_load(const struct ef_file *e, uint64_t *vaddr, uint64_t *offset)
{
	Elf64_Phdr p;
	int found = 0;
	for (unsigned i = 0; i < e->phnum; i++)
		if (phdr(e, i, &p) == 0 && p.p_type == PT_LOAD && (!found || p.p_vaddr < *vaddr)) {
			*vaddr = p.p_vaddr;
			*offset = p.p_offset;
			found = 1;
		}
	return found ? 0 : -1;
}

#define SYM_NAME_MAX 64
#define SYM_HITS 8 /* places a name is written; more is a forged table */
#define SYM_WIN 8192

/* Where in the string table [off, off + size) each of names[0..n) is
 * written, NUL-terminated: every place, a name's start or the tail of a
 * longer one (a linker may share a tail), up to SYM_HITS each. Read a window
 * at a time, the windows overlapping by a name's length. 0, or -1. */
static int name_places(const struct ef_file *e, uint64_t off, uint64_t size,
		       const char *const *names, size_t n, uint64_t (*at)[SYM_HITS], unsigned *nat)
{
	char buf[SYM_NAME_MAX + SYM_WIN];
	size_t len[16], keep = 0, carry = 0;

	if (n > 16)
		return -1;
	for (size_t k = 0; k < n; k++) {
		len[k] = strlen(names[k]) + 1; /* with its NUL */
		if (len[k] > SYM_NAME_MAX)
			return -1;
		keep = len[k] - 1 > keep ? len[k] - 1 : keep;
		nat[k] = 0;
	}
	for (uint64_t pos = 0; pos < size;) {
		size_t m = size - pos < SYM_WIN ? (size_t)(size - pos) : SYM_WIN;
		if (file_read(e, buf + carry, m, off + pos) != 0)
			return -1;
		size_t have = carry + m;
		uint64_t base = pos - carry; /* the table offset of buf[0] */
		for (size_t k = 0; k < n; k++)
			for (const char *p = buf; (p = memmem(p, have - (size_t)(p - buf), names[k], len[k]));
			     p++) {
				size_t i = (size_t)(p - buf);
				if (i + len[k] <= carry)
					continue; /* inside the last window's tail: counted then */
				if (nat[k] == SYM_HITS)
					return -1;
				at[k][nat[k]++] = base + i;
			}
		pos += m;
		carry = have < keep ? have : keep;
		memmove(buf, buf + have - carry, carry);
	}
	return 0;
}

int ef_file_symbols(const struct ef_file *e, const char *const *names, uint64_t *values, size_t n)
{
	uint64_t sym_off, sym_addr, sym_size, str_off, str_addr, str_size, at[16][SYM_HITS];
	unsigned nat[16];
	struct stat st;
	Elf64_Sym chunk[256];
	int found = 0;

	for (size_t k = 0; k < n; k++)
		values[k] = 0;
	if (!e->is64 || ef_file_section(e, ".symtab", &sym_off, &sym_addr, &sym_size) != 0)
		return -1;
	if (ef_file_section(e, ".strtab", &str_off, &str_addr, &str_size) != 0 || fstat(e->fd, &st) != 0)
		return -1;
	/* Another process's file, and hostile: tables inside the file, no
	 * larger than a real program's, read a window at a time. */
	uint64_t file_size = (uint64_t)st.st_size;
	if (sym_off > file_size || sym_size > file_size - sym_off ||
	    sym_size / sizeof(Elf64_Sym) > EF_MAX_SYMTAB || str_off > file_size ||
	    str_size > file_size - str_off || str_size == 0 || str_size > EF_MAX_STRTAB ||
	    name_places(e, str_off, str_size, names, n, at, nat) != 0)
		return -1;
	for (uint64_t pos = sym_off, end = sym_off + sym_size; pos + sizeof(Elf64_Sym) <= end;) {
		size_t m = (size_t)((end - pos) / sizeof(Elf64_Sym));
		m = m < sizeof(chunk) / sizeof(chunk[0]) ? m : sizeof(chunk) / sizeof(chunk[0]);
		if (file_read(e, chunk, m * sizeof(Elf64_Sym), pos) != 0)
			return -1;
		pos += m * sizeof(Elf64_Sym);
		for (size_t i = 0; i < m; i++) {
			if (chunk[i].st_shndx == SHN_UNDEF)
				continue;
			for (size_t k = 0; k < n; k++)
				for (unsigned j = 0; j < nat[k] && !values[k]; j++)
					if (at[k][j] == chunk[i].st_name) {
						values[k] = chunk[i].st_value;
						found++;
					}
		}
	}
	return found;
}

int ef_file_vaddr_of(const struct ef_file *e, uint64_t off, uint64_t *vaddr)
{
	Elf64_Phdr p;
	for (unsigned i = 0; i < e->phnum; i++)
		if (phdr(e, i, &p) == 0 && p.p_type == PT_LOAD && off >= p.p_offset &&
		    off < p.p_offset + p.p_filesz) {
			*vaddr = off - p.p_offset + p.p_vaddr;
			return 0;
		}
	return -1;
}

int ef_file_dynsym_at(const struct ef_file *e, uint64_t vaddr, char *name, size_t size,
		     uint64_t *value)
{
	uint64_t sym_off, sym_addr, sym_size, str_off, str_addr, str_size, best = 0;
	uint32_t best_name = 0;
	int found = 0;

	struct stat st;
	Elf64_Sym chunk[128];

	if (!e->is64 || ef_file_section(e, ".dynsym", &sym_off, &sym_addr, &sym_size) != 0 ||
	    ef_file_section(e, ".dynstr", &str_off, &str_addr, &str_size) != 0 || fstat(e->fd, &st) != 0)
		return -1;
	/* The file may be another process's, and hostile: a table no bigger
	 * than the file and than MAX_DYNSYM entries, read a chunk at a time. */
	uint64_t file_size = (uint64_t)st.st_size;
	if (sym_off > file_size || sym_size > file_size - sym_off ||
	    sym_size / sizeof(Elf64_Sym) > MAX_DYNSYM)
		return -1;
	for (uint64_t at = sym_off + sizeof(Elf64_Sym), end = sym_off + sym_size;
	     at + sizeof(Elf64_Sym) <= end;) {
		size_t n = (size_t)((end - at) / sizeof(Elf64_Sym));
		n = n < sizeof(chunk) / sizeof(chunk[0]) ? n : sizeof(chunk) / sizeof(chunk[0]);
		if (file_read(e, chunk, n * sizeof(Elf64_Sym), at) != 0)
			return -1;
		at += n * sizeof(Elf64_Sym);
		for (size_t i = 0; i < n; i++) {
			const Elf64_Sym *y = &chunk[i];
			if (ef_sym_holds(y->st_shndx, y->st_info, y->st_value, y->st_size, vaddr) &&
			    ef_sym_nearer(y->st_value, found, best))
				best = y->st_value, best_name = y->st_name, found = 1;
		}
	}
	if (!found || best_name >= str_size || size == 0)
		return -1;
	ssize_t n = pread(e->fd, name, size - 1, (off_t)(str_off + best_name));
	if (n <= 0)
		return -1;
	name[n] = '\0';
	*value = best;
	return 0;
}

/* The first note of PT_NOTE segments with this owner and type: the length of
 * its descriptor (copied up to cap), or -1. */
static long find_note(const struct ef_file *e, const char *owner, uint32_t type, uint8_t *desc,
		      size_t cap)
{
	Elf64_Phdr p;

	for (unsigned i = 0; i < e->phnum; i++) {
		if (phdr(e, i, &p) != 0 || p.p_type != PT_NOTE || p.p_filesz > (1u << 20))
			continue;
		uint64_t at = p.p_offset, end = p.p_offset + p.p_filesz;
		Elf64_Nhdr h; /* the same 12 bytes in both classes */
		struct ef_note n;
		for (; at + sizeof(h) <= end && file_read(e, &h, sizeof(h), at) == 0 &&
		       ef_note_layout(&h, at, end, &n) == 0;
		     at = n.next) {
			char name[16];
			if (!ef_note_is(&h, owner, type) || h.n_namesz > sizeof(name) ||
			    file_read(e, name, h.n_namesz, n.name_at) != 0 || !ef_note_named(name, owner))
				continue;
			size_t k = h.n_descsz < cap ? h.n_descsz : cap;
			if (k && file_read(e, desc, k, n.desc_at) != 0)
				return -1;
			return (long)h.n_descsz;
		}
	}
	return -1;
}

long ef_file_note(const struct ef_file *e, const char *owner, uint32_t type, uint8_t *desc, size_t cap)
{
	return find_note(e, owner, type, desc, cap);
}

size_t ef_file_build_id(const struct ef_file *e, uint8_t *id, size_t cap)
{
	long n = find_note(e, "GNU", NT_GNU_BUILD_ID, id, cap);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap;
}

int ef_resolve_program(const char *program, char *out, size_t size)
{
	struct stat st;

	if (!*program)
		return -1;
	if (strchr(program, '/')) {
		if ((size_t)snprintf(out, size, "%s", program) >= size)
			return -1;
		return 0;
	}
	/* execvp: PATH, or glibc's default when unset; an empty item is ".". */
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path;; p++) {
		const char *end = strchrnul(p, ':');
		int n = (int)(end - p);
		if ((size_t)snprintf(out, size, "%.*s%s%s", n, n ? p : ".", "/", program) < size &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
			return 0;
		if (!*end)
			break;
		p = end;
	}
	return -1;
}

struct facts {
	int elf, go, dynamic, secure_uid, secure_gid, caps;
	char owner[64], group[64];
};

/* A Go program: the .go.buildinfo section (Go 1.13 and later), or the Go
 * build-id note ("Go", type 4) in its PT_NOTE segment. */
static int is_go(const struct ef_file *e)
{
	uint64_t off, addr, size;
	uint8_t id[1];
	return ef_file_section(e, ".go.buildinfo", &off, &addr, &size) == 0 ||
	       find_note(e, "Go", 4, id, 0) >= 0;
}

static void learn(const char *path, struct facts *f)
{
	struct stat st;
	struct ef_file e;

	memset(f, 0, sizeof(*f));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0 || ef_file_open(fd, &e) != 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	f->elf = 1;
	f->dynamic = ef_file_interp(&e);
	f->go = is_go(&e);
	/* The loader ignores LD_PRELOAD's paths in secure-execution mode, which
	 * the kernel enters when exec changes the caller's user or group, or
	 * grants file capabilities. */
	f->secure_uid = (st.st_mode & S_ISUID) && st.st_uid != getuid();
	f->secure_gid = (st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getgid();
	f->caps = fgetxattr(fd, "security.capability", NULL, 0) > 0;
	if (ef_user_name(st.st_uid, f->owner, sizeof(f->owner)) != 0)
		snprintf(f->owner, sizeof(f->owner), "another user");
	if (ef_group_name(st.st_gid, f->group, sizeof(f->group)) != 0)
		snprintf(f->group, sizeof(f->group), "another group");
	close(fd);
}

/* Starts one reason's line: "PATH " or, for a script, "PATH, a script run by X, which ". */
static struct ef_buf *begin(struct ef_buf *out, const char *path, const char *who, int *n)
{
	++*n;
	return ef_fmt(out, "%s%s%s", path, who ? ", " : " ", who ? who : "");
}

#define SECURE ": it runs in secure-execution mode, where the loader ignores LD_PRELOAD's " \
	       "path to libepollfix, so the library cannot act\n"
#define SECURE_PRELOADED ": it runs in secure-execution mode, where the loader ignores " \
	       "LD_PRELOAD, but /etc/ld.so.preload loads libepollfix, with the system file's " \
	       "settings only (secure execution ignores EPOLLFIX_* variables, so epollfix's " \
	       "options too)\n"

/* glibc's loader reads /etc/ld.so.preload for every program, setuid ones too:
 * does it name a libepollfix? */
static int preloaded_by_system(void)
{
	char buf[8192];
	int fd = open("/etc/ld.so.preload", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (char *save = NULL, *w = strtok_r(buf, " \t\n:", &save); w;
	     w = strtok_r(NULL, " \t\n:", &save)) {
		const char *base = strrchr(w, '/') ? strrchr(w, '/') + 1 : w;
		if (w[0] != '#' && strncmp(base, "libepollfix", 11) == 0)
			return 1;
	}
	return 0;
}

/* One line per reason the facts give; who is NULL, or "a script run by X, which ". */
static int say(const char *path, const char *who, const struct facts *f, const char *go,
	       int supervised, struct ef_buf *out)
{
	int n = 0;

	if (f->go && go && supervised) {
		/* Not a reason: what the command will do, told by --check only. */
		if (*go) {
			int none = 0;
			ef_fmt(begin(out, path, who, &none), "%s", go);
		}
	} else if (f->go && go && *go)
		ef_fmt(begin(out, path, who, &n), "%s", go);
	else if (!f->dynamic && f->go)
		ef_fmt(begin(out, path, who, &n), "%s",
		       "is a statically linked Go program: no dynamic loader runs, so LD_PRELOAD is "
		       "ignored, and Go's runtime waits with raw system calls anyway; Go's own timer "
		       "precision needs Go's epoll_pwait2 support\n");
	else if (!f->dynamic)
		ef_fmt(begin(out, path, who, &n), "%s",
		       "is statically linked (no PT_INTERP): no dynamic loader runs, so LD_PRELOAD is "
		       "ignored and libepollfix cannot act\n");
	else if (f->go)
		ef_fmt(begin(out, path, who, &n), "%s",
		       "is a Go program: Go's runtime waits with raw system calls, which libepollfix "
		       "cannot reach; only its C code (cgo libraries) is reached, such as a C library's "
		       "busy loop under --clamp; Go's own timer precision needs Go's epoll_pwait2 "
		       "support\n");
	const char *secure = f->dynamic && (f->secure_uid || f->secure_gid || f->caps) &&
					     preloaded_by_system()
				     ? SECURE_PRELOADED
				     : SECURE;
	if (f->secure_uid)
		ef_fmt(begin(out, path, who, &n), "is setuid %s%s", f->owner, secure);
	if (f->secure_gid)
		ef_fmt(begin(out, path, who, &n), "is setgid %s%s", f->group, secure);
	if (f->caps)
		ef_fmt(begin(out, path, who, &n), "has file capabilities%s", secure);
	return n;
}

/* The interpreter a `#!` line names, into interp; through /usr/bin/env, the
 * program env would run, resolved through PATH. 0, or -1 if not a script. */
static int shebang(const char *path, char *interp, size_t size)
{
	char line[256 + 1];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, line, sizeof(line) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return -1;
	line[n] = '\0';
	line[strcspn(line, "\n")] = '\0';
	char *words[8], *save = NULL;
	int nw = 0;
	for (char *w = strtok_r(line + 2, " \t", &save); w && nw < 8; w = strtok_r(NULL, " \t", &save))
		words[nw++] = w;
	if (nw == 0)
		return -1;
	const char *base = strrchr(words[0], '/') ? strrchr(words[0], '/') + 1 : words[0];
	if (strcmp(base, "env") == 0) {
		/* env [-S] [-i] [NAME=value...] program: the first other word. */
		for (int i = 1; i < nw; i++)
			if (words[i][0] != '-' && !strchr(words[i], '='))
				return ef_resolve_program(words[i], interp, size);
		return -1;
	}
	return (size_t)snprintf(interp, size, "%s", words[0]) < size ? 0 : -1;
}

/* The program's own libc; *done 0 when path is no ELF file. */
static enum ef_libc elf_libc(const char *path, int *done)
{
	struct ef_file e;
	Elf64_Phdr p;
	enum ef_libc libc = EF_LIBC_STATIC;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*done = fd >= 0 && ef_file_open(fd, &e) == 0;
	for (unsigned i = 0; *done && i < e.phnum; i++) {
		char interp[PATH_MAX];
		if (phdr(&e, i, &p) != 0 || p.p_type != PT_INTERP)
			continue;
		size_t n = p.p_filesz < sizeof(interp) - 1 ? (size_t)p.p_filesz : sizeof(interp) - 1;
		if (read_at(fd, interp, n, p.p_offset) != 0)
			n = 0;
		interp[n] = '\0';
		const char *base = strrchr(interp, '/') ? strrchr(interp, '/') + 1 : interp;
		libc = strncmp(base, "ld-musl-", 8) == 0 ? EF_LIBC_MUSL : EF_LIBC_GLIBC;
		break;
	}
	if (fd >= 0)
		close(fd);
	return *done ? libc : EF_LIBC_UNKNOWN;
}

enum ef_libc ef_target_libc(const char *path)
{
	char interp[PATH_MAX];
	int elf;
	enum ef_libc libc = elf_libc(path, &elf);
	if (elf || shebang(path, interp, sizeof(interp)) != 0)
		return libc;
	return elf_libc(interp, &elf);
}

int ef_target_reasons(const char *path, const char *go, int supervised, struct ef_buf *out)
{
	struct facts f;
	char interp[PATH_MAX], who[PATH_MAX + 64];

	learn(path, &f);
	if (f.elf)
		return say(path, NULL, &f, go, supervised, out);
	if (shebang(path, interp, sizeof(interp)) != 0)
		return 0;
	/* The kernel runs the interpreter; the script's own mode bits do not
	 * change the user (Linux ignores setuid on scripts). */
	learn(interp, &f);
	snprintf(who, sizeof(who), "a script run by %s, which ", interp);
	return f.elf ? say(path, who, &f, NULL, 0, out) : 0;
}

int ef_target_check(const char *program, int warn, const char *go, int supervised)
{
	char path[PATH_MAX], text[4096] = "";
	struct ef_buf out = EF_BUF(text);

	if (ef_resolve_program(program, path, sizeof(path)) != 0) {
		if (!warn)
			printf("program:      %s: not found in PATH\n", program);
		return -1;
	}
	if (access(path, R_OK) != 0) {
		if (!warn)
			printf("program:      %s cannot be read: %s\n", path, strerror(errno));
		return -1;
	}
	int n = ef_target_reasons(path, go, supervised, &out);
	for (char *line = text, *end; *line; line = end + 1) {
		end = strchr(line, '\n');
		*end = '\0';
		if (warn)
			fprintf(stderr, "epollfix: warning: %s\n", line);
		else
			printf("program:      %s\n", line);
	}
	if (!n && !warn && !supervised)
		printf("program:      %s: the dynamic loader will preload libepollfix\n", path);
	return n;
}
