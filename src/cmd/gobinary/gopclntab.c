/* A Go executable's function table, read from its file (gopclntab.h). */
#include "gopclntab.h"

#include <elf.h>
#include <string.h>

#define HEADER_SIZE 72	       /* magic, pads, minLC, ptrSize; nfunc, nfiles, textStart, 5 offsets */
#define MAX_FUNCS (1u << 24)   /* a Kubernetes binary has about 100,000 */
#define MAX_WANT 8
#define MAX_HITS 4	       /* names are written once each; more is a forged table */
#define MAX_LOADS 16
#define MAX_CANDIDATES 16  /* headers in a stripped file's segments: a real one has one */
/* runtime.moduledata's first 24 words: pcHeader; the slices funcnametab,
 * cutab, filetab, pctab, pclntable, ftab (pointer, length, capacity each);
 * findfunctab, minpc, maxpc, text, etext (the same in 1.19 to 1.26). */
#define MD_WORDS 24
#define MD_FUNCNAMETAB 1
#define MD_CUTAB 4
#define MD_FILETAB 7
#define MD_PCTAB 10
#define MD_PCLNTABLE 13
#define MD_FTAB 16
#define MD_MINPC 20
#define MD_MAXPC 21
#define MD_TEXT 22
#define MD_ETEXT 23
#define WIN 8192

static uint32_t u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t u64(const uint8_t *p)
{
	return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32;
}

/* A window on a region of the file, refilled as the reader moves: tables of
 * megabytes are read in a few hundred reads, and never held whole. */
struct win {
	const struct ef_file *e;
	uint64_t off, size; /* the region: its file offset and length */
	uint64_t at;	    /* the region offset buf[0] holds */
	size_t have;
	uint8_t buf[WIN];
};

static void win_init(struct win *w, const struct ef_file *e, uint64_t off, uint64_t size)
{
	w->e = e;
	w->off = off;
	w->size = size;
	w->at = 0;
	w->have = 0;
}

/* n bytes at region offset o, or NULL: outside the region, or unreadable. */
static const uint8_t *win_get(struct win *w, uint64_t o, size_t n)
{
	if (n > WIN || o > w->size || n > w->size - o)
		return NULL;
	if (o >= w->at && o - w->at + n <= w->have)
		return w->buf + (o - w->at);
	size_t want = w->size - o < WIN ? (size_t)(w->size - o) : WIN;
	if (ef_file_read(w->e, w->buf, want, w->off + o) != 0) {
		w->have = 0;
		return NULL;
	}
	w->at = o;
	w->have = want;
	return w->buf;
}

struct pcln {
	uint64_t off, addr, size; /* the section */
	uint64_t nfunc, names, cu, files, pc, ftab; /* the header's offsets */
	uint64_t text_start;	   /* 0 since Go 1.26 ("no longer stored") */
	uint32_t magic;		   /* EF_GO_PCLN_GO118 or EF_GO_PCLN_GO120 */
	uint64_t md[MD_WORDS];
	unsigned nmd; /* module data found pointing at it: one is right */
};

/* The instruction quantum the table's header names (minLC: the unit of its
 * pc deltas, cmd/internal/sys's MinLC) for the file's machine: 1 on x86-64,
 * 4 on arm64 (fixed-width instructions); 0 for a machine whose code is not
 * read. */
static unsigned quantum(const struct ef_file *e)
{
	return e->machine == EM_X86_64 ? 1 : e->machine == EM_AARCH64 ? 4 : 0;
}

static int header(const struct ef_file *e, struct pcln *t)
{
	uint8_t h[HEADER_SIZE];
	if (t->size < HEADER_SIZE || ef_file_read(e, h, sizeof(h), t->off) != 0)
		return -1;
	/* pad1, pad2 0; minLC the machine's quantum; ptrSize 8 */
	t->magic = u32(h);
	if ((t->magic != EF_GO_PCLN_GO118 && t->magic != EF_GO_PCLN_GO120) || h[4] || h[5] ||
	    !quantum(e) || h[6] != quantum(e) || h[7] != 8)
		return -1;
	t->nfunc = u64(h + 8);
	t->text_start = u64(h + 24);
	t->names = u64(h + 32);
	t->cu = u64(h + 40);
	t->files = u64(h + 48);
	t->pc = u64(h + 56);
	t->ftab = u64(h + 64);
	return 0;
}

/* The module data that points at each candidate table: its words, the one
 * place the text's start is kept. It is found by its first words, the
 * table's address and those of its parts, in the file's writable segments,
 * in one pass for all candidates (a pass per candidate would let a file of
 * forged headers cost a scan each). Sets ts[k].nmd to the number of matches;
 * the words are kept of the first. */
static int module_data(const struct ef_file *e, struct pcln *ts, unsigned nts)
{
	struct ef_load loads[MAX_LOADS];
	unsigned n = ef_file_loads(e, loads, MAX_LOADS);
	struct win w;
	for (unsigned k = 0; k < nts; k++)
		ts[k].nmd = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!(loads[i].flags & PF_W))
			continue;
		win_init(&w, e, loads[i].offset, loads[i].filesz);
		/* file offset and address agree modulo the page, so modulo 8 too */
		uint64_t first = (8 - (loads[i].vaddr & 7)) & 7;
		for (uint64_t o = first; o + 8 * MD_WORDS <= loads[i].filesz; o += 8) {
			const uint8_t *p = win_get(&w, o, 8 * MD_WORDS);
			if (!p)
				return -1;
			uint64_t addr = u64(p);
			for (unsigned k = 0; k < nts; k++) {
				struct pcln *t = &ts[k];
				if (addr != t->addr)
					continue;
				uint64_t md[MD_WORDS];
				for (int j = 0; j < MD_WORDS; j++)
					md[j] = u64(p + 8 * j);
				if (md[MD_FUNCNAMETAB] != t->addr + t->names ||
				    md[MD_CUTAB] != t->addr + t->cu || md[MD_FILETAB] != t->addr + t->files ||
				    md[MD_PCTAB] != t->addr + t->pc || md[MD_PCLNTABLE] != t->addr + t->ftab ||
				    md[MD_FTAB] != md[MD_PCLNTABLE] || md[MD_FTAB + 1] != t->nfunc + 1)
					continue;
				if (t->nmd++ == 0)
					memcpy(t->md, md, sizeof(md));
			}
		}
	}
	return 0;
}

/* The table at t->off (its address and the bytes up to its end, or its
 * segment's, set): its header read and its offsets inside it. Cheap: no
 * scan; its module data is looked for after. */
static int header_ok(const struct ef_file *e, struct pcln *t)
{
	return header(e, t) == 0 && t->nfunc > 0 && t->nfunc <= MAX_FUNCS && t->names < t->size &&
			       t->cu < t->size && t->files < t->size && t->pc < t->size &&
			       t->ftab < t->size && (t->nfunc + 1) * 8 <= t->size - t->ftab &&
			       t->addr <= UINT64_MAX - t->size
		       ? 0
		       : -1;
}

/* The function table: its section, or, where an external linker merged that
 * into .data.rel.ro (a cgo PIE of Go 1.19 to 1.25), the one header in the
 * loaded bytes that exactly one module's data points at. Headers are
 * collected first, at most MAX_CANDIDATES (a real binary has one; more is a
 * forged file), then matched in one pass: the cost is a few scans of the
 * file whatever it holds. */
static int locate(const struct ef_file *e, struct pcln *t, const char **why)
{
	/* either magic's last three bytes, pads, minLC, ptrSize */
	const uint8_t magic[7] = { 0xff, 0xff, 0xff, 0, 0, (uint8_t)quantum(e), 8 };
	struct ef_load loads[MAX_LOADS];
	struct pcln c[MAX_CANDIDATES];
	struct win w;
	unsigned nc = 0, found = 0;

	memset(t, 0, sizeof(*t));
	if (ef_file_section(e, ".gopclntab", &t->off, &t->addr, &t->size) == 0 ||
	    ef_file_section(e, ".data.rel.ro.gopclntab", &t->off, &t->addr, &t->size) == 0) {
		if (header_ok(e, t) != 0 || module_data(e, t, 1) != 0 || t->nmd != 1)
			return *why = "a .gopclntab of another format than Go 1.18 to 1.27's, or no module "
				      "data pointing at it",
			       -1;
		return 0;
	}
	unsigned n = ef_file_loads(e, loads, MAX_LOADS);
	for (unsigned i = 0; i < n; i++) {
		win_init(&w, e, loads[i].offset, loads[i].filesz);
		for (uint64_t o = (8 - (loads[i].vaddr & 7)) & 7; o + HEADER_SIZE <= loads[i].filesz; o += 8) {
			const uint8_t *p = win_get(&w, o, 1 + sizeof(magic));
			if (!p)
				return *why = "an unreadable segment", -1;
			if ((p[0] != 0xf0 && p[0] != 0xf1) || memcmp(p + 1, magic, sizeof(magic)) != 0)
				continue;
			struct pcln h = { .off = loads[i].offset + o, .addr = loads[i].vaddr + o,
					  .size = loads[i].filesz - o };
			if (header_ok(e, &h) != 0)
				continue;
			if (nc == MAX_CANDIDATES)
				return *why = "too many function table headers (a forged file)", -1;
			c[nc++] = h;
		}
	}
	if (nc == 0)
		return *why = "no .gopclntab of Go 1.18 to 1.27's formats", -1;
	if (module_data(e, c, nc) != 0)
		return *why = "an unreadable segment", -1;
	for (unsigned k = 0; k < nc; k++) {
		if (c[k].nmd != 1)
			continue; /* none points at it, or two do: which is it? */
		if (found++)
			return *why = "two function tables", -1;
		*t = c[k];
	}
	return found ? 0 : (*why = "no .gopclntab of Go 1.18 to 1.27's formats", -1);
}

/* The offsets in funcnametab of each wanted name: names are NUL-terminated,
 * one after the other. */
static int name_offsets(const struct ef_file *e, const struct pcln *t, struct ef_go_func *funcs,
			size_t n, uint64_t hits[][MAX_HITS], unsigned *nhits)
{
	struct win w;
	char cur[EF_GO_FUNC_NAME_MAX];
	size_t len = 0, want_len[MAX_WANT];
	uint64_t start = 0, size = t->md[MD_FUNCNAMETAB + 1];

	for (size_t k = 0; k < n; k++) {
		want_len[k] = strlen(funcs[k].name);
		nhits[k] = 0;
	}
	win_init(&w, e, t->off + t->names, size);
	for (uint64_t o = 0; o < size;) {
		size_t chunk = size - o < WIN ? (size_t)(size - o) : WIN;
		const uint8_t *p = win_get(&w, o, chunk);
		if (!p)
			return -1;
		for (size_t i = 0; i < chunk; i++, o++) {
			if (p[i]) {
				if (len < sizeof(cur))
					cur[len] = (char)p[i];
				len++;
				continue;
			}
			for (size_t k = 0; k < n; k++)
				if (len == want_len[k] && memcmp(cur, funcs[k].name, len) == 0) {
					if (nhits[k] == MAX_HITS)
						return -1;
					hits[k][nhits[k]++] = start;
				}
			len = 0;
			start = o + 1;
		}
	}
	return 0;
}

int ef_go_pcln_find(const struct ef_file *e, struct ef_go_func *funcs, size_t n, uint32_t *magic,
		    const char **why)
{
	struct pcln t;
	uint64_t hits[MAX_WANT][MAX_HITS];
	unsigned nhits[MAX_WANT];

	if (n > MAX_WANT)
		return *why = "too many functions asked for", -1;
	for (size_t k = 0; k < n; k++)
		if (strlen(funcs[k].name) >= EF_GO_FUNC_NAME_MAX)
			return *why = "a function name too long", -1;
	if (locate(e, &t, why) != 0)
		return -1;
	uint64_t text = t.md[MD_TEXT];
	/* The runtime's check: always up to Go 1.19, where the start is
	 * always stored; from 1.20 when it is (up to 1.25). */
	if ((t.text_start || t.magic == EF_GO_PCLN_GO118) && t.text_start != text)
		return *why = "the .gopclntab's text start is not the module's", -1;
	if (t.md[MD_FUNCNAMETAB + 1] > t.size - t.names)
		return *why = "a function name table outside .gopclntab", -1;
	if (name_offsets(e, &t, funcs, n, hits, nhits) != 0)
		return *why = "function names repeated in .gopclntab", -1;

	struct win ftab, fn;
	int found[MAX_WANT] = { 0 };
	uint64_t first = 0, last = 0;
	win_init(&ftab, e, t.off + t.ftab, (t.nfunc + 1) * 8);
	win_init(&fn, e, t.off + t.ftab, t.size - t.ftab);
	for (uint64_t i = 0; i < t.nfunc; i++) {
		const uint8_t *p = win_get(&ftab, i * 8, 16);
		if (!p)
			return *why = "an unreadable function table", -1;
		uint32_t entry = u32(p), funcoff = u32(p + 4), next = u32(p + 8);
		if (entry > next)
			return *why = "a function table not sorted by address", -1;
		if (i == 0)
			first = entry;
		if (i == t.nfunc - 1)
			last = next;
		/* _func: entryOff, as the table says, then nameOff */
		const uint8_t *f = win_get(&fn, funcoff, 8);
		if (!f || u32(f) != entry)
			return *why = "a function table whose entries disagree", -1;
		int32_t name = (int32_t)u32(f + 4);
		for (size_t k = 0; k < n; k++)
			for (unsigned j = 0; j < nhits[k]; j++) {
				if (name < 0 || (uint64_t)name != hits[k][j])
					continue;
				if (found[k]++)
					return *why = "a function named twice in .gopclntab", -1;
				funcs[k].start = text + entry;
				funcs[k].end = text + next;
			}
	}
	/* moduledataverify1: the module's bounds are the table's. */
	if (t.md[MD_MINPC] != text + first || t.md[MD_MAXPC] != text + last ||
	    t.md[MD_ETEXT] < t.md[MD_MAXPC] || text > UINT64_MAX - last)
		return *why = "a module whose bounds are not its function table's", -1;
	for (size_t k = 0; k < n; k++)
		if (!found[k])
			return *why = "a runtime function missing from .gopclntab", -1;
	if (magic)
		*magic = t.magic;
	return 0;
}
