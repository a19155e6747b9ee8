#define _GNU_SOURCE
#include "recognize.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "callers.h"
#include "elfsym.h"
#include "fmt.h"
#include "wait_path.h"

/* A symbol only that runtime defines: the caller belongs to the runtime when
 * its own object defines the symbol (libuv.so, node's executable with libuv
 * linked in, uvloop's and gevent's extensions with libuv built in). libev
 * exports a libevent emulation, but not event_config_new. */
static const struct {
	const char *symbol;
	enum ef_runtime rt;
} markers[] = {
	{ "uv_run", EF_RT_LIBUV },
	{ "ngx_process_events_and_timers", EF_RT_NGINX },
	{ "event_config_new", EF_RT_LIBEVENT },
};

/* EPOLLFIX_GENUINE_CALLERS and EPOLLFIX_SUBMS_CALLERS, handed over when the
 * configuration is read; the program's executable (the loader names it "" on
 * glibc, argv[0] on musl) and glibc's lock-free lookup, by the constructor.
 * Answers are cached only once all of them are known. */
static _Atomic(const char *) genuine_list, subms_list;
static _Atomic int lists_known, ready;
static char exe_path[4096];

void ef_recognize_lists(const char *genuine_callers, const char *subms_callers)
{
	atomic_store_explicit(&genuine_list, genuine_callers, memory_order_relaxed);
	atomic_store_explicit(&subms_list, subms_callers, memory_order_relaxed);
	atomic_store_explicit(&lists_known, 1, memory_order_release);
}

#if defined(__GLIBC__) && defined(__GLIBC_PREREQ)
#if __GLIBC_PREREQ(2, 35)
#define HAVE_DL_FIND_OBJECT 1
#endif
#endif

#ifdef HAVE_DL_FIND_OBJECT
/* Looked up, not linked: the library still loads on glibc before 2.35. */
static _Atomic(void *) find_object_fn;
#endif

void ef_recognize_init(void)
{
	int saved = errno;

	ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	exe_path[n > 0 ? n : 0] = '\0';
#ifdef HAVE_DL_FIND_OBJECT
	atomic_store_explicit(&find_object_fn, dlsym(RTLD_DEFAULT, "_dl_find_object"),
			      memory_order_relaxed);
#endif
	errno = saved;
	atomic_store_explicit(&ready, 1, memory_order_release);
}

/* The loaded object holding an address. Not dladdr: glibc's takes the
 * loader's main lock, which dlopen holds while the new objects' constructors
 * run, so a thread's first wait would stall behind another thread's dlopen,
 * for ever if that constructor waited for the thread.
 * - glibc 2.35 and later: _dl_find_object, which reads the loader's table
 *   without a lock (it is async-signal-safe), then the program headers from
 *   the ELF header at the start of the object's mapping.
 * - Otherwise (musl, older glibc, before the constructor): dl_iterate_phdr.
 *   glibc's takes only the lock that guards the list of objects, held while
 *   the list changes and never around user code (but, unlike the main lock,
 *   not reset in a child of fork: a fork while another thread held it would
 *   hang the child's first new call site). musl's dlopen drops its lock before
 *   constructors, and dl_iterate_phdr takes it briefly to read.
 * None of them allocates. */
struct object {
	uintptr_t addr;
	uintptr_t bias;
	const ElfW(Phdr) *phdr;
	size_t phnum;
	const char *name;
	int found;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct object *o = data;
	(void)size;
	if (!ef_elf_contains(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, o->addr))
		return 0;
	o->bias = info->dlpi_addr;
	o->phdr = info->dlpi_phdr;
	o->phnum = info->dlpi_phnum;
	o->name = info->dlpi_name;
	o->found = 1;
	return 1;
}

static void locate(struct object *o)
{
#ifdef HAVE_DL_FIND_OBJECT
	void *fn = atomic_load_explicit(&find_object_fn, memory_order_relaxed);
	struct dl_find_object r;
	if (fn) {
		if (((__typeof__(&_dl_find_object))fn)((void *)o->addr, &r) != 0)
			return; /* generated code: in no object */
		size_t phnum;
		const ElfW(Phdr) *ph = ef_elf_phdr_at(r.dlfo_map_start, r.dlfo_map_end, &phnum);
		uintptr_t bias = r.dlfo_link_map->l_addr;
		if (ph && ef_elf_contains(bias, ph, phnum, o->addr)) {
			o->bias = bias;
			o->phdr = ph;
			o->phnum = phnum;
			o->name = r.dlfo_link_map->l_name;
			o->found = 1;
			return;
		}
	}
#endif
	dl_iterate_phdr(find_object, o);
}

/* The program is the object holding the program headers the kernel loaded. */
static int is_program(const struct object *o)
{
	return ef_elf_contains(o->bias, o->phdr, o->phnum, (uintptr_t)getauxval(AT_PHDR));
}

/* What an object is, whoever calls from it: one small word per object. */
#define KIND_RT 0x0f     /* enum ef_runtime from the markers */
#define KIND_JNI 0x10    /* defines Java_ symbols: look at the calling function */
#define KIND_LISTED 0x60 /* enum ef_listed << 5 */

/* known: the lists and the program's path are known. */
static int object_kind(const struct object *obj, const struct ef_elf *elf, int known)
{
	int kind = EF_RT_UNKNOWN;
	const char *genuine = NULL, *subms = NULL;

	if (atomic_load_explicit(&lists_known, memory_order_acquire)) {
		genuine = atomic_load_explicit(&genuine_list, memory_order_relaxed);
		subms = atomic_load_explicit(&subms_list, memory_order_relaxed);
	}

	for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++)
		if (ef_elf_lookup(elf, markers[i].symbol)) {
			kind = markers[i].rt;
			break;
		}
	/* JNI code (libnio's Java_sun_nio_ch_EPoll_wait) is exported by name. */
	if (ef_elf_defines_prefix(elf, "Java_"))
		kind |= KIND_JNI;
	if (is_program(obj))
		kind |= (int)ef_object_judged(genuine, subms, known ? exe_path : NULL,
					      (const char *)getauxval(AT_EXECFN))
			<< 5;
	else
		kind |= (int)ef_object_judged(genuine, subms, obj->name, NULL) << 5;
	return kind;
}

/* Small lock-free maps shared by all threads: call sites are few (one per
 * event loop), objects fewer. A full map just means reading the object again. */
#define SITES 32
#define OBJECTS 32
struct entry {
	_Atomic(const void *) key;
	_Atomic int value;
};
static struct entry sites[SITES], objects[OBJECTS];

static int map_get(struct entry *map, unsigned n, const void *key, int *value)
{
	for (unsigned i = 0; i < n; i++) {
		const void *k = atomic_load_explicit(&map[i].key, memory_order_acquire);
		if (k == key) {
			*value = atomic_load_explicit(&map[i].value, memory_order_relaxed);
			return 1;
		}
		if (!k)
			break;
	}
	return 0;
}

static void map_put(struct entry *map, unsigned n, const void *key, int value)
{
	for (unsigned i = 0; i < n; i++) {
		const void *expected = NULL;
		if (atomic_load_explicit(&map[i].key, memory_order_relaxed) == key)
			return;
		/* Claim an empty slot with a marker, fill it, then publish the key. */
		if (atomic_compare_exchange_strong(&map[i].key, &expected, (const void *)&map[i])) {
			atomic_store_explicit(&map[i].value, value, memory_order_relaxed);
			atomic_store_explicit(&map[i].key, key, memory_order_release);
			return;
		}
	}
}

static __attribute__((noinline, cold)) enum ef_runtime classify(const void *ra, int cache)
{
	struct object obj = { .addr = (uintptr_t)ra };
	struct ef_elf elf;
	int kind, opened = 0;

	locate(&obj);
	if (!obj.found) /* generated code: no object, no name */
		return EF_RT_UNKNOWN;
	/* The program headers are the object's own (or its loader's copy): a key
	 * no other loaded object shares. */
	if (!map_get(objects, OBJECTS, obj.phdr, &kind)) {
		opened = ef_elf_open(&elf, obj.bias, obj.phdr, obj.phnum, NULL) == 0;
		kind = object_kind(&obj, &elf, cache);
		if (cache)
			map_put(objects, OBJECTS, obj.phdr, kind);
	}
	switch ((enum ef_listed)((kind & KIND_LISTED) >> 5)) {
	case EF_LISTED_GENUINE:
		return EF_RT_USER_GENUINE;
	case EF_LISTED_SUBMS:
		return EF_RT_USER_SUBMS;
	case EF_LISTED_NONE:
		break;
	}
	if (kind & KIND_JNI) {
		if (!opened)
			opened = ef_elf_open(&elf, obj.bias, obj.phdr, obj.phnum, NULL) == 0;
		const char *fn = opened ? ef_elf_symbol_at(&elf, (uintptr_t)ra) : NULL;
		if (fn && strncmp(fn, "Java_", 5) == 0)
			return EF_RT_JAVA;
	}
	return (enum ef_runtime)(kind & KIND_RT);
}

static _Atomic unsigned seen;

EF_WAIT_PATH enum ef_runtime ef_caller_runtime(const void *ra)
{
	int rt;

	if (map_get(sites, SITES, ra, &rt))
		return (enum ef_runtime)rt;
	/* Before the constructor, or while another thread reads the configuration,
	 * the answer may lack a list or the program's path: it is not cached. */
	int cache = atomic_load_explicit(&ready, memory_order_acquire) &&
		    atomic_load_explicit(&lists_known, memory_order_acquire);
	int saved = errno;
	rt = (int)classify(ra, cache);
	errno = saved;
	atomic_fetch_or_explicit(&seen, 1u << rt, memory_order_relaxed);
	if (cache)
		map_put(sites, SITES, ra, rt);
	return (enum ef_runtime)rt;
}

unsigned ef_runtimes_seen(void)
{
	return atomic_load_explicit(&seen, memory_order_relaxed) & ~(1u << EF_RT_UNKNOWN);
}

uint64_t ef_runtimes_live(void)
{
	return (uint64_t)(uintptr_t)&seen;
}
