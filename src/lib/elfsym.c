#include "elfsym.h"

#include <string.h>

#include "elfrule.h"

/* A corrupt GNU hash chain must not keep the wait path walking. */
#define MAX_SYMS (1u << 24)

int ef_elf_contains(uintptr_t bias, const ElfW(Phdr) *phdr, size_t phnum, uintptr_t addr)
{
	for (size_t i = 0; i < phnum; i++) {
		uintptr_t start = bias + phdr[i].p_vaddr;
		if (phdr[i].p_type == PT_LOAD && addr >= start && addr - start < phdr[i].p_memsz)
			return 1;
	}
	return 0;
}

const ElfW(Phdr) *ef_elf_phdr_at(const void *map_start, const void *map_end, size_t *phnum)
{
	const ElfW(Ehdr) *e = map_start;
	size_t size = (size_t)((const char *)map_end - (const char *)map_start);

	*phnum = 0;
	if (!e || map_end <= map_start || size < sizeof(*e) || memcmp(e->e_ident, ELFMAG, SELFMAG) != 0 ||
	    e->e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
	    e->e_phentsize != sizeof(ElfW(Phdr)) || e->e_phoff > size ||
	    e->e_phnum > (size - e->e_phoff) / sizeof(ElfW(Phdr)))
		return NULL;
	*phnum = e->e_phnum;
	return (const ElfW(Phdr) *)((const char *)map_start + e->e_phoff);
}

static int holds(const struct ef_elf *o, const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;
	return p && len && ef_elf_contains(o->bias, o->phdr, o->phnum, a) &&
	       ef_elf_contains(o->bias, o->phdr, o->phnum, a + len - 1);
}

/* A d_ptr as glibc left it (relocated) or as the file has it (musl, vDSO). */
static const void *address(const struct ef_elf *o, ElfW(Addr) d_ptr)
{
	if (ef_elf_contains(o->bias, o->phdr, o->phnum, (uintptr_t)d_ptr))
		return (const void *)(uintptr_t)d_ptr;
	if (ef_elf_contains(o->bias, o->phdr, o->phnum, (uintptr_t)d_ptr + o->bias))
		return (const void *)((uintptr_t)d_ptr + o->bias);
	return NULL;
}

/* The GNU table counts no symbols: the last chain of the highest bucket ends
 * at the last one. Returns 0 when the table does not fit in the object. */
static uint32_t gnu_count(const struct ef_elf *o)
{
	const uint32_t *h = o->gnu_hash;
	if (!holds(o, h, 4 * sizeof(uint32_t)))
		return 0;
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
	const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(h + 4) + bloom_size);
	if (!nbuckets || bloom_size > MAX_SYMS || nbuckets > MAX_SYMS ||
	    !holds(o, buckets, nbuckets * sizeof(uint32_t)))
		return 0;
	const uint32_t *chain = buckets + nbuckets;
	uint32_t last = 0;
	for (uint32_t i = 0; i < nbuckets; i++)
		if (buckets[i] > last)
			last = buckets[i];
	if (last < symoffset)
		return symoffset; /* no hashed symbol at all */
	for (; last < MAX_SYMS; last++) {
		const uint32_t *c = chain + (last - symoffset);
		if (!holds(o, c, sizeof(*c)))
			return 0;
		if (*c & 1)
			return last + 1;
	}
	return 0;
}

int ef_elf_open(struct ef_elf *o, uintptr_t bias, const ElfW(Phdr) *phdr, size_t phnum,
		const ElfW(Dyn) *dyn)
{
	int mine = !dyn; /* the object's own section, which must lie in it */

	memset(o, 0, sizeof(*o));
	o->bias = bias;
	o->phdr = phdr;
	o->phnum = phnum;
	for (size_t i = 0; !dyn && i < phnum; i++)
		if (phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(bias + phdr[i].p_vaddr);
	if (!dyn)
		return -1;

	/* The section ends with DT_NULL; a bound keeps a corrupt one finite. */
	for (size_t i = 0; i < 4096 && (!mine || holds(o, &dyn[i], sizeof(dyn[i]))) &&
			   dyn[i].d_tag != DT_NULL;
	     i++) {
		switch (dyn[i].d_tag) {
		case DT_SYMTAB:
			o->symtab = address(o, dyn[i].d_un.d_ptr);
			break;
		case DT_STRTAB:
			o->strtab = address(o, dyn[i].d_un.d_ptr);
			break;
		case DT_STRSZ:
			o->strsz = dyn[i].d_un.d_val;
			break;
		case DT_HASH:
			o->hash = address(o, dyn[i].d_un.d_ptr);
			break;
		case DT_GNU_HASH:
			o->gnu_hash = address(o, dyn[i].d_un.d_ptr);
			break;
		default:
			break;
		}
	}
	if (o->hash && holds(o, o->hash, 2 * sizeof(uint32_t)) && o->hash[1] < MAX_SYMS &&
	    holds(o, o->hash, (2 + (size_t)o->hash[0] + o->hash[1]) * sizeof(uint32_t)))
		o->nsyms = o->hash[1];
	else
		o->hash = NULL;
	if (o->gnu_hash && !o->hash)
		o->nsyms = gnu_count(o);
	/* The string table starts with an empty name and symbol 0 is the null one. */
	if (!o->nsyms || !holds(o, o->strtab, o->strsz) || o->strtab[0] != '\0' ||
	    !holds(o, o->symtab, o->nsyms * sizeof(ElfW(Sym))) || o->symtab[0].st_name != 0) {
		memset(o, 0, sizeof(*o));
		return -1;
	}
	return 0;
}

static const char *name_of(const struct ef_elf *o, const ElfW(Sym) *s)
{
	/* strtab ends with a NUL (checked by the linker, and strtab[strsz-1] below) */
	return s->st_name < o->strsz && o->strtab[o->strsz - 1] == '\0' ? o->strtab + s->st_name
									 : NULL;
}

static int defined(const ElfW(Sym) *s)
{
	return s->st_shndx != SHN_UNDEF && (s->st_info & 0xf) != STT_TLS;
}

static int is(const struct ef_elf *o, uint32_t i, const char *name)
{
	const char *n = name_of(o, &o->symtab[i]);
	return defined(&o->symtab[i]) && n && strcmp(n, name) == 0;
}

static uint32_t gnu_hash(const char *name)
{
	uint32_t h = 5381;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = h * 33 + *p;
	return h;
}

static uint32_t sysv_hash(const char *name)
{
	uint32_t h = 0;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h = (h << 4) + *p;
		uint32_t g = h & 0xf0000000u;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

const ElfW(Sym) *ef_elf_lookup(const struct ef_elf *o, const char *name)
{
	if (!o->nsyms)
		return NULL;
	if (o->hash) {
		uint32_t nbucket = o->hash[0];
		const uint32_t *bucket = o->hash + 2, *chain = bucket + nbucket;
		if (!nbucket)
			return NULL;
		/* Each step moves along a chain of at most nsyms entries. */
		uint32_t steps = 0;
		for (uint32_t i = bucket[sysv_hash(name) % nbucket]; i && i < o->nsyms && steps++ < o->nsyms;
		     i = chain[i])
			if (is(o, i, name))
				return &o->symtab[i];
		return NULL;
	}
	const uint32_t *h = o->gnu_hash;
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
	const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(h + 4) + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t hash = gnu_hash(name);
	for (uint32_t i = buckets[hash % nbuckets]; i >= symoffset && i < o->nsyms; i++) {
		uint32_t c = chain[i - symoffset];
		if ((c | 1) == (hash | 1) && is(o, i, name))
			return &o->symtab[i];
		if (c & 1)
			break;
	}
	return NULL;
}

const char *ef_elf_symbol_at(const struct ef_elf *o, uintptr_t addr)
{
	const ElfW(Sym) *best = NULL;
	uintptr_t off = addr - o->bias;

	/* As glibc's dladdr: the symbol whose extent holds addr, the nearest below. */
	for (uint32_t i = 1; i < o->nsyms; i++) {
		const ElfW(Sym) *s = &o->symtab[i];
		if (ef_sym_holds(s->st_shndx, s->st_info, s->st_value, s->st_size, off) &&
		    ef_sym_nearer(s->st_value, best != NULL, best ? best->st_value : 0))
			best = s;
	}
	return best ? name_of(o, best) : NULL;
}

int ef_elf_defines_prefix(const struct ef_elf *o, const char *prefix)
{
	size_t n = strlen(prefix);

	for (uint32_t i = 1; i < o->nsyms; i++) {
		const char *name = name_of(o, &o->symtab[i]);
		if (defined(&o->symtab[i]) && name && strncmp(name, prefix, n) == 0)
			return 1;
	}
	return 0;
}
