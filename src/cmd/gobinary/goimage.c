/* A Go executable's facts, from its file (goimage.h). */
#define _GNU_SOURCE
#include "goimage.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"
#include "goarch.h"
#include "gocode.h"
#include "gopclntab.h"
#include "maps.h"
#include "target.h"

const char *ef_go_why_text(enum ef_go_why why)
{
	static const char *const text[EF_GO_WHY_COUNT] = {
		[EF_GO_OK] = "runtime layout checked",
		[EF_GO_NOT_ELF] = "not an ELF executable of this machine",
		[EF_GO_NOT_GO] = "not Go",
		[EF_GO_STRIPPED] = "stripped: no .symtab, and no addresses from the runtime's code",
		[EF_GO_NO_VERSION] = "no readable Go build information",
		[EF_GO_UNKNOWN_RELEASE] = "runtime layout unknown for this release",
		[EF_GO_NO_SYMBOLS] = "runtime symbols missing from .symtab",
		[EF_GO_TOO_COSTLY] = "too costly to read (over 256 MiB or 500 ms of CPU: a forged file)",
		[EF_GO_OTHER_ARCH] = "of a machine this command does not serve",
	};
	return why < EF_GO_WHY_COUNT ? text[why] : "?";
}

/* The build information (Go 1.18 and later write the version inline):
 * "\xff Go buildinf:", pointer size, flags (bit 1: inline strings), padding
 * to 32 bytes, then the version as a varint length and its bytes. */
static int build_version(const struct ef_file *e, char *out, size_t size)
{
	uint64_t off, addr, len;
	unsigned char b[32 + 10 + 80];

	if (ef_file_section(e, ".go.buildinfo", &off, &addr, &len) != 0 || len < 33)
		return -1;
	size_t n = len < sizeof(b) ? (size_t)len : sizeof(b);
	if (ef_file_read(e, b, n, off) != 0 || memcmp(b, "\xff Go buildinf:", 14) != 0 ||
	    !(b[15] & 2))
		return -1;
	uint64_t vlen = 0;
	size_t at = 32;
	for (unsigned shift = 0; at < n && shift < 64; shift += 7) {
		vlen |= (uint64_t)(b[at] & 0x7f) << shift;
		if (!(b[at++] & 0x80))
			break;
	}
	if (vlen == 0 || at >= n)
		return -1;
	/* A devel build's version ("devel go1.27-abcdef Tue ...") or one with
	 * experiments ("go1.26.8 X:nodwarf5") is longer and has spaces: kept
	 * whole as far as it fits, an ending cut shown as "...", and any byte
	 * outside printable ASCII as '?' (it is printed). */
	size_t have = vlen < n - at ? (size_t)vlen : n - at, keep = have < size - 1 ? have : size - 1;
	for (size_t i = 0; i < keep; i++) {
		unsigned char c = b[at + i];
		out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[keep] = '\0';
	if (keep < vlen && size > 4)
		memcpy(out + (keep < size - 4 ? keep : size - 4), "...", 4);
	return 0;
}

/* "go1.N", "go1.N.M", "go1.NrcK": N; -1 for anything else: a devel build,
 * or experiments (" X:..."), whose runtime may differ from the release's. */
static int release_minor(const char *v)
{
	if (strncmp(v, "go1.", 4) != 0 || v[4] < '0' || v[4] > '9')
		return -1;
	int minor = 0;
	const char *p = v + 4;
	for (; *p >= '0' && *p <= '9' && minor < 1000; p++)
		minor = minor * 10 + (*p - '0');
	const char *rest = p;
	if (*rest == '.' || strncmp(rest, "rc", 2) == 0) /* the patch release, or rcK */
		for (rest += *rest == '.' ? 1 : 2; *rest >= '0' && *rest <= '9'; rest++)
			;
	return *rest == '\0' ? minor : -1;
}

const char *ef_go_image_says(const struct ef_go_image *img, enum ef_go_why why)
{
	return *img->says ? img->says : ef_go_why_text(why);
}

uint64_t ef_go_wake_tag(const struct ef_go_image *img, uint64_t bias)
{
	return img->nil_tag ? 0 : img->wake + bias;
}

/* Why a release is not served, in the refusal itself (goimage.h). */
static enum ef_go_why unknown_release(struct ef_go_image *img)
{
	struct ef_buf says = EF_BUF(img->says);
	if (img->minor < 0)
		ef_fmt(&says, "%s (a development build, or one with GOEXPERIMENT, whose runtime may differ "
			      "from its release's; %s)", ef_go_why_text(EF_GO_UNKNOWN_RELEASE), EF_GO_SERVED);
	else
		ef_fmt(&says, "%s (Go 1.%d: before 1.19 no runtime was checked, and before 1.18 the "
			      "function table has another format; %s)", ef_go_why_text(EF_GO_UNKNOWN_RELEASE),
		       img->minor, EF_GO_SERVED);
	return EF_GO_UNKNOWN_RELEASE;
}

/* The addresses from the runtime's code: a stripped binary's, or, from
 * EF_GO_CODE_FROM on, any binary's, which .symtab (symtab: found) must then
 * agree with. v: .symtab's, overwritten. */
static enum ef_go_why from_code(const struct ef_file *e, struct ef_go_image *img, uint64_t *v, int symtab)
{
	static const char *const name[] = { "runtime.sched", "runtime.epfd", "runtime.netpollEventFd" };
	struct ef_go_vars vars;
	const char *why;
	struct ef_buf says = EF_BUF(img->says);
	int checks = img->minor >= EF_GO_CODE_FROM;
	if (ef_go_code_vars(e, &vars, &why) != 0) {
		if (!symtab || !checks) {
			ef_fmt(&says, "%s (%s)", ef_go_why_text(EF_GO_STRIPPED), why);
			return EF_GO_STRIPPED;
		}
		ef_fmt(&says, "%s (Go 1.%d: %s; %s)", ef_go_why_text(EF_GO_UNKNOWN_RELEASE), img->minor, why,
		       EF_GO_SERVED);
		return EF_GO_UNKNOWN_RELEASE;
	}
	/* The function table's format of the release (goimage.h). */
	if ((vars.pcln_magic == EF_GO_PCLN_GO118) != (img->minor < 20)) {
		ef_fmt(&says, "%s (Go 1.%d: its function table's format is %s; %s)",
		       ef_go_why_text(EF_GO_UNKNOWN_RELEASE), img->minor,
		       vars.pcln_magic == EF_GO_PCLN_GO118 ? "Go 1.18's and 1.19's" : "that of Go 1.20 and later",
		       EF_GO_SERVED);
		return EF_GO_UNKNOWN_RELEASE;
	}
	/* The wake-up item's data of the release: the variable's address up
	 * to 1.26, 0 from 1.27 (goimage.h). */
	if (vars.nil_tag != checks) {
		ef_fmt(&says, "%s (Go 1.%d: its wake-up item's data %s; %s)",
		       ef_go_why_text(EF_GO_UNKNOWN_RELEASE), img->minor,
		       vars.nil_tag ? "is 0, as from Go 1.27" : "is an address, as before Go 1.27", EF_GO_SERVED);
		return EF_GO_UNKNOWN_RELEASE;
	}
	uint64_t found[3] = { vars.sched, vars.epfd, vars.wake };
	for (int i = 0; checks && symtab && i < 3; i++)
		if (v[i] != found[i]) {
			ef_fmt(&says, "%s (Go 1.%d: .symtab's %s is not the one the runtime's code uses; %s)",
			       ef_go_why_text(EF_GO_UNKNOWN_RELEASE), img->minor, name[i], EF_GO_SERVED);
			return EF_GO_UNKNOWN_RELEASE;
		}
	if (!symtab)
		ef_fmt(&says, "%s", "stripped: runtime layout checked, addresses from .gopclntab and the "
				    "runtime's code");
	else if (checks)
		ef_fmt(&says, "%s", "runtime layout checked: the runtime's code agrees with .symtab");
	img->from_code = 1;
	img->nil_tag = vars.nil_tag;
	v[0] = vars.sched;
	v[1] = vars.epfd;
	/* The wake-up variable of the release: an eventfd from 1.23 (goimage.h). */
	v[2] = v[3] = 0;
	v[img->minor >= 23 ? 2 : 3] = vars.wake;
	return EF_GO_OK;
}

/* What the file says: read_bounded counts what it costs. With facts (the
 * tests' go-image), a program of a machine not served is read on. */
static enum ef_go_why read_image(const struct ef_file *e, enum ef_go_server server, struct ef_go_image *img,
				  int code, int facts)
{
	static const char *const names[] = { "runtime.sched", "runtime.epfd", "runtime.netpollEventFd",
					     "runtime.netpollBreakRd" };
	uint64_t v[4] = { 0 };
	uint64_t off, addr, size;
	if (ef_file_section(e, ".go.buildinfo", &off, &addr, &size) != 0)
		return EF_GO_NOT_GO;
	int version = build_version(e, img->version, sizeof(img->version));
	/* The machine first: whatever else the file says, a program of one not
	 * served is refused for that, and costs no further reading. */
	img->machine = e->machine;
	struct ef_buf says = EF_BUF(img->says);
	if (!facts && ef_go_arch_refused(server, e->machine, &says))
		return EF_GO_OTHER_ARCH;
	if (version != 0)
		return EF_GO_NO_VERSION;
	img->minor = release_minor(img->version);
	if (img->minor < EF_GO_MINOR_MIN)
		return unknown_release(img);
	int symtab = ef_file_symbols(e, names, v, 4) >= 0;
	if (code || !symtab || img->minor >= EF_GO_CODE_FROM) {
		enum ef_go_why why = from_code(e, img, v, symtab && !code);
		if (why != EF_GO_OK)
			return why;
	}
	img->pie = e->type == ET_DYN;
	img->sched = v[0];
	img->epfd = v[1];
	/* The wake-up variable the release has: an eventfd replaced the pipe
	 * (goimage.h); the epoll item's data is checked again in fdinfo. */
	img->wake_eventfd = v[2] != 0;
	img->wake = img->wake_eventfd ? v[2] : v[3];
	if (!img->sched || !img->epfd || !img->wake ||
	    ef_file_first_load(e, &img->first_vaddr, &img->first_offset) != 0)
		return EF_GO_NO_SYMBOLS;
	return EF_GO_OK;
}

unsigned ef_go_test_slow(void)
{
	const char *v = getenv("EPOLLFIX_GO_TEST_SLOW");
	char *end;
	unsigned long n = v ? strtoul(v, &end, 10) : 1;
	return v && *v && !*end && n >= 1 && n <= 1000 ? (unsigned)n : 1;
}

static enum ef_go_why read_bounded(int fd, enum ef_go_server server, struct ef_go_image *img, int code, int facts,
				    int (*stop)(void))
{
	struct ef_file e;
	struct ef_budget b;

	memset(img, 0, sizeof(*img));
	if (ef_file_open(fd, &e) != 0 || !e.is64 || (e.type != ET_EXEC && e.type != ET_DYN))
		return EF_GO_NOT_ELF;
	ef_budget_init(&b, EF_GO_READ_BYTES, EF_GO_READ_CPU_MS * ef_go_test_slow(), stop);
	e.budget = &b;
	enum ef_go_why why = read_image(&e, server, img, code, facts);
	if (b.spent) { /* whatever it found before: not read whole */
		*img->says = '\0';
		return EF_GO_TOO_COSTLY;
	}
	return why;
}

enum ef_go_why ef_go_image_read_until(int fd, enum ef_go_server server, struct ef_go_image *img,
				      int (*stop)(void))
{
	return read_bounded(fd, server, img, 0, 0, stop);
}

enum ef_go_why ef_go_image_read(int fd, enum ef_go_server server, struct ef_go_image *img)
{
	return read_bounded(fd, server, img, 0, 0, NULL);
}

int ef_go_image_main(int argc, char **argv)
{
	int code = argc == 3 && strcmp(argv[1], "--code") == 0;
	if (argc != 2 + code) {
		fprintf(stderr, "usage: epollfix go-image [--code] PROGRAM\n");
		return 2;
	}
	int fd = open(argv[1 + code], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[1 + code]);
		return 1;
	}
	struct ef_go_image img;
	enum ef_go_why why = read_bounded(fd, EF_GO_SUPERVISOR, &img, code, 1, NULL);
	close(fd);
	/* The verdict the supervisor's paths give (goarch.h), after the facts. */
	char arch[160] = "";
	struct ef_buf ab = EF_BUF(arch);
	int refused = why != EF_GO_NOT_ELF && why != EF_GO_NOT_GO &&
		      ef_go_arch_refused(EF_GO_SUPERVISOR, img.machine, &ab);
	if (why != EF_GO_OK) {
		fprintf(stderr, "%s: %s%s%s%s\n", argv[1 + code], ef_go_image_says(&img, why),
			refused ? " (" : "", arch, refused ? ")" : "");
		return 1;
	}
	printf("%s %s sched=%#llx epfd=%#llx %s=%#llx%s%s%s%s\n", img.version,
	       img.from_code ? "code" : "symtab", (unsigned long long)img.sched,
	       (unsigned long long)img.epfd, img.wake_eventfd ? "netpollEventFd" : "netpollBreakRd",
	       (unsigned long long)img.wake, img.nil_tag ? " tag=0" : "", refused ? " (" : "",
	       arch, refused ? ")" : "");
	return 0;
}

struct bias_search {
	uint64_t ino, page;
	const struct ef_go_image *img;
	uint64_t *bias;
};

/* The mapping of the executable's first PT_LOAD: its file's inode, at that
 * segment's page-aligned offset. */
static int first_load(const struct ef_map_line *m, void *arg)
{
	struct bias_search *s = arg;
	if (m->inode != s->ino || m->offset != (s->img->first_offset & ~(s->page - 1)))
		return 0;
	*s->bias = m->start - (s->img->first_vaddr & ~(s->page - 1));
	return 1;
}

int ef_go_load_bias(long pid, uint64_t ino, const struct ef_go_image *img, uint64_t *bias)
{
	struct bias_search s = { ino, (uint64_t)sysconf(_SC_PAGESIZE), img, bias };
	return ef_maps_each(pid, first_load, &s) == 1 ? 0 : -1;
}
