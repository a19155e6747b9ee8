/* The in-memory dynamic symbol reader on objects the runner really loaded:
 * libuv (GNU hash, dynamic section relocated in place by glibc), libm, and the
 * vDSO (both hash tables, dynamic section left as in the file, as musl leaves
 * every object). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

#include "elfrule.h"
#include "elfsym.h"

struct found {
	uintptr_t addr;   /* in: an address in the object, or 0 */
	const char *name; /* in: or the object's name ends with this */
	uintptr_t bias;
	const ElfW(Phdr) *phdr;
	size_t phnum;
	int ok;
};

static int each(struct dl_phdr_info *info, size_t size, void *data)
{
	struct found *f = data;
	(void)size;
	size_t n = strlen(info->dlpi_name), m = f->name ? strlen(f->name) : 0;
	if ((f->addr && ef_elf_contains(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, f->addr)) ||
	    (f->name && n >= m && strcmp(info->dlpi_name + n - m, f->name) == 0)) {
		f->bias = info->dlpi_addr;
		f->phdr = info->dlpi_phdr;
		f->phnum = info->dlpi_phnum;
		f->ok = 1;
		return 1;
	}
	return 0;
}

static struct found object_at(const void *addr)
{
	struct found f = { .addr = (uintptr_t)addr };
	dl_iterate_phdr(each, &f);
	cr_assert(f.ok, "no loaded object holds %p", addr);
	return f;
}

static struct ef_elf open_at(const void *addr)
{
	struct found f = object_at(addr);
	struct ef_elf o;
	cr_assert_eq(ef_elf_open(&o, f.bias, f.phdr, f.phnum, NULL), 0);
	return o;
}

static void *symbol_address(const struct ef_elf *o, const char *name)
{
	const ElfW(Sym) *s = ef_elf_lookup(o, name);
	return s ? (void *)(o->bias + s->st_value) : NULL;
}

static const ElfW(Dyn) *dynamic_of(const struct ef_elf *o)
{
	for (size_t i = 0; i < o->phnum; i++)
		if (o->phdr[i].p_type == PT_DYNAMIC)
			return (const ElfW(Dyn) *)(o->bias + o->phdr[i].p_vaddr);
	return NULL;
}

/* A copy of o's dynamic section as the file has it: every address the reader
 * uses made file-relative again, and the tag drop (if not DT_NULL) left out. */
static void file_dynamic(const struct ef_elf *o, ElfW(Dyn) *copy, size_t cap, ElfW(Sxword) drop)
{
	const ElfW(Dyn) *d = dynamic_of(o);
	size_t n = 0;
	cr_assert_not_null(d);
	for (; d->d_tag != DT_NULL && n + 1 < cap; d++) {
		if (drop != DT_NULL && d->d_tag == drop)
			continue;
		copy[n] = *d;
		if ((d->d_tag == DT_SYMTAB || d->d_tag == DT_STRTAB || d->d_tag == DT_HASH ||
		     d->d_tag == DT_GNU_HASH) &&
		    ef_elf_contains(o->bias, o->phdr, o->phnum, d->d_un.d_ptr))
			copy[n].d_un.d_ptr -= o->bias;
		n++;
	}
	copy[n].d_tag = DT_NULL;
}

static ElfW(Addr) raw(const struct ef_elf *o, ElfW(Sxword) tag)
{
	for (const ElfW(Dyn) *d = dynamic_of(o); d->d_tag != DT_NULL; d++)
		if (d->d_tag == tag)
			return d->d_un.d_ptr;
	return 0;
}

static void *libuv(void)
{
	void *h = dlopen("libuv.so.1", RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "dlopen libuv.so.1 (libuv1-dev): %s", dlerror());
	return h;
}

Test(elfsym, finds_uv_run_in_libuv)
{
	void *h = libuv();
	void *uv_run = dlsym(h, "uv_run");
	cr_assert_not_null(uv_run);
	struct ef_elf o = open_at(uv_run);

	cr_assert_not_null(o.gnu_hash, "Debian links with GNU hash only");
	cr_assert_gt(o.nsyms, 100);
	cr_assert_eq(symbol_address(&o, "uv_run"), uv_run);
	cr_assert_eq(symbol_address(&o, "uv_loop_init"), dlsym(h, "uv_loop_init"));
	/* Undefined in libuv: called, not defined there. */
	cr_assert_null(ef_elf_lookup(&o, "epoll_wait"));
	cr_assert_null(ef_elf_lookup(&o, "ngx_process_events_and_timers"));
	cr_assert_null(ef_elf_lookup(&o, "uv_ru"));
	cr_assert_null(ef_elf_lookup(&o, ""));
	dlclose(h);
}

Test(elfsym, names_the_function_holding_an_address)
{
	void *h = libuv();
	char *uv_run = dlsym(h, "uv_run");
	struct ef_elf o = open_at(uv_run);
	Dl_info info;

	cr_assert_str_eq(ef_elf_symbol_at(&o, (uintptr_t)uv_run), "uv_run");
	cr_assert(dladdr(uv_run + 5, &info) && info.dli_sname);
	cr_assert_str_eq(ef_elf_symbol_at(&o, (uintptr_t)uv_run + 5), info.dli_sname);
	cr_assert(ef_elf_defines_prefix(&o, "uv_"));
	cr_assert_not(ef_elf_defines_prefix(&o, "Java_"));
	dlclose(h);
}

Test(elfsym, library_without_the_marker)
{
	void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h);
	/* A variable: libm's functions are mostly IFUNCs, which dlsym resolves. */
	void *signgam_var = dlsym(h, "signgam");
	cr_assert_not_null(signgam_var);
	struct ef_elf o = open_at(signgam_var);

	cr_assert_null(ef_elf_lookup(&o, "uv_run"));
	cr_assert_null(ef_elf_lookup(&o, "event_config_new"));
	cr_assert_eq(symbol_address(&o, "signgam"), signgam_var);
	cr_assert_not_null(ef_elf_lookup(&o, "cos"));
	cr_assert_not(ef_elf_defines_prefix(&o, "uv_"));
	dlclose(h);
}

/* glibc adds the bias to libuv's dynamic section in place; musl does not. The
 * same section as the file has it must give the same answers. */
Test(elfsym, unrelocated_dynamic_section)
{
	void *h = libuv();
	void *uv_run = dlsym(h, "uv_run");
	struct ef_elf o = open_at(uv_run), u;
	ElfW(Dyn) copy[256];

	cr_assert(ef_elf_contains(o.bias, o.phdr, o.phnum, raw(&o, DT_SYMTAB)),
		  "glibc relocated DT_SYMTAB in place");
	file_dynamic(&o, copy, 256, DT_NULL);
	for (const ElfW(Dyn) *d = copy; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_SYMTAB)
			cr_assert_not(ef_elf_contains(o.bias, o.phdr, o.phnum, d->d_un.d_ptr));
	cr_assert_eq(ef_elf_open(&u, o.bias, o.phdr, o.phnum, copy), 0);
	cr_assert_eq(u.symtab, o.symtab);
	cr_assert_eq(u.strtab, o.strtab);
	cr_assert_eq(u.gnu_hash, o.gnu_hash);
	cr_assert_eq(symbol_address(&u, "uv_run"), uv_run);
	dlclose(h);
}

/* The vDSO's dynamic section is read-only: glibc leaves it as linked, so this
 * is a real unrelocated object under glibc too. */
Test(elfsym, vdso_with_either_hash_table)
{
	const void *vdso = (const void *)getauxval(AT_SYSINFO_EHDR);
	if (!vdso)
		cr_skip_test("no vDSO");
	struct ef_elf o = open_at(vdso), g, s;
	ElfW(Dyn) copy[64];

	cr_assert_not(ef_elf_contains(o.bias, o.phdr, o.phnum, raw(&o, DT_SYMTAB)),
		      "the vDSO's DT_SYMTAB is file-relative");
	int (*gettime)(clockid_t, struct timespec *) =
		(int (*)(clockid_t, struct timespec *))symbol_address(&o, "__vdso_clock_gettime");
	cr_assert_not_null(gettime);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_assert_eq(gettime(CLOCK_MONOTONIC, &b), 0);
	cr_assert(b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec));

	if (!raw(&o, DT_HASH) || !raw(&o, DT_GNU_HASH))
		cr_skip_test("this vDSO has one hash table");
	file_dynamic(&o, copy, 64, DT_HASH);
	cr_assert_eq(ef_elf_open(&g, o.bias, o.phdr, o.phnum, copy), 0);
	cr_assert_null(g.hash);
	file_dynamic(&o, copy, 64, DT_GNU_HASH);
	cr_assert_eq(ef_elf_open(&s, o.bias, o.phdr, o.phnum, copy), 0);
	cr_assert_null(s.gnu_hash);
	cr_assert_eq(g.nsyms, s.nsyms, "GNU count %u, SysV count %u", g.nsyms, s.nsyms);
	cr_assert_eq(symbol_address(&g, "__vdso_clock_gettime"), (void *)gettime);
	cr_assert_eq(symbol_address(&s, "__vdso_clock_gettime"), (void *)gettime);
	cr_assert_null(ef_elf_lookup(&g, "uv_run"));
	cr_assert_null(ef_elf_lookup(&s, "uv_run"));
}

Test(elfsym, no_dynamic_section)
{
	void *h = libuv();
	struct ef_elf o = open_at(dlsym(h, "uv_run")), n;
	ElfW(Dyn) empty[1] = { { .d_tag = DT_NULL } };

	/* No tables, or no program headers to find them in: nothing is found. */
	cr_assert_eq(ef_elf_open(&n, o.bias, o.phdr, o.phnum, empty), -1);
	cr_assert_null(ef_elf_lookup(&n, "uv_run"));
	cr_assert_null(ef_elf_symbol_at(&n, (uintptr_t)dlsym(h, "uv_run")));
	cr_assert_eq(ef_elf_open(&n, o.bias, o.phdr, 0, NULL), -1);
	dlclose(h);
}

/* glibc 2.35's _dl_find_object gives the mapping, not the program headers:
 * they are read from the ELF header the first segment maps. */
Test(elfsym, program_headers_from_the_elf_header)
{
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
	void *h = libuv();
	const void *where[] = { dlsym(h, "uv_run"), (const void *)object_at };
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		struct dl_find_object r;
		struct found f = object_at(where[i]);
		size_t phnum;

		cr_assert_eq(_dl_find_object((void *)where[i], &r), 0);
		const ElfW(Phdr) *ph = ef_elf_phdr_at(r.dlfo_map_start, r.dlfo_map_end, &phnum);
		cr_assert_not_null(ph);
		cr_assert_eq(phnum, f.phnum);
		cr_assert_eq(memcmp(ph, f.phdr, phnum * sizeof(*ph)), 0);
		cr_assert_eq(r.dlfo_link_map->l_addr, f.bias);
		cr_assert(ef_elf_contains(f.bias, ph, phnum, (uintptr_t)where[i]));
	}
	dlclose(h);

	/* Not an ELF header: refused. */
	static const char junk[256] = "not an ELF header";
	size_t n = 99;
	cr_assert_null(ef_elf_phdr_at(junk, junk + sizeof(junk), &n));
	cr_assert_eq(n, 0);
	cr_assert_null(ef_elf_phdr_at(junk, junk, &n));
#else
	cr_skip_test("glibc before 2.35 has no _dl_find_object");
#endif
}

/* The rules the in-memory reader and the file reader share (elfrule.c). */
Test(elfsym, one_rule_for_notes_and_for_the_symbol_at_an_address)
{
	struct ef_note n;
	Elf64_Nhdr h = { .n_namesz = 4, .n_descsz = 20, .n_type = NT_GNU_BUILD_ID };
	cr_assert_eq(ef_note_layout(&h, 8, 8 + 12 + 4 + 20, &n), 0);
	cr_assert_eq(n.name_at, 20);
	cr_assert_eq(n.desc_at, 24);
	cr_assert_eq(n.next, 44);
	cr_assert_eq(ef_note_layout(&h, 8, 8 + 12 + 4 + 19, &n), -1, "a descriptor past the end");
	h.n_descsz = 0xffffffffu;
	cr_assert_eq(ef_note_layout(&h, 0, 1u << 20, &n), -1, "a forged size");
	h.n_descsz = 20;
	cr_assert(ef_note_is(&h, "GNU", NT_GNU_BUILD_ID));
	cr_assert_not(ef_note_is(&h, "Go", NT_GNU_BUILD_ID), "owner by its size");
	cr_assert_not(ef_note_is(&h, "GNU", 4));
	cr_assert(ef_note_named("GNU", "GNU"));
	cr_assert_not(ef_note_named("GNX", "GNU"));

	unsigned char func = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
	cr_assert(ef_sym_holds(1, func, 0x1000, 0x10, 0x100f));
	cr_assert_not(ef_sym_holds(1, func, 0x1000, 0x10, 0x1010), "past its extent");
	cr_assert_not(ef_sym_holds(1, func, 0x1000, 0x10, 0xfff), "below it");
	cr_assert(ef_sym_holds(1, func, 0x1000, 0, 0x1000), "no size: its own address");
	cr_assert_not(ef_sym_holds(1, func, 0x1000, 0, 0x1001));
	cr_assert_not(ef_sym_holds(SHN_UNDEF, func, 0x1000, 0x10, 0x1000), "undefined");
	cr_assert_not(ef_sym_holds(SHN_ABS, func, 0x1000, 0x10, 0x1000), "absolute");
	cr_assert_not(ef_sym_holds(1, ELF64_ST_INFO(STB_GLOBAL, STT_TLS), 0x1000, 0x10, 0x1000),
		      "thread-local");
	cr_assert(ef_sym_nearer(0x1000, 0, 0));
	cr_assert(ef_sym_nearer(0x1008, 1, 0x1000), "the nearest below wins");
	cr_assert_not(ef_sym_nearer(0x1000, 1, 0x1000), "the first of equals stays");
}
