#define _GNU_SOURCE
#include "recognize.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* A symbol only that runtime defines, looked up in the whole process; the
 * caller belongs to the runtime when the symbol lives in the caller's object
 * (libuv.so, or node's executable with libuv linked in). libev exports a
 * libevent emulation, but not event_config_new. */
static const struct {
	const char *symbol;
	enum ef_runtime rt;
} markers[] = {
	{ "uv_run", EF_RT_LIBUV },
	{ "ngx_process_events_and_timers", EF_RT_NGINX },
	{ "event_config_new", EF_RT_LIBEVENT },
};

static const char *const names[EF_RT_COUNT] = { "unknown", "libuv", "nginx", "libevent",
						"Java NIO" };

const char *ef_runtime_name(enum ef_runtime rt)
{
	return rt < EF_RT_COUNT ? names[rt] : "unknown";
}

/* The objects defining each marker, looked up once by the constructor: on the
 * wait path dlsym could allocate (a missing symbol builds an error message).
 * A runtime dlopen'ed later is not recognised; the learner still finds it. */
static _Atomic(void *) marker_base[sizeof(markers) / sizeof(markers[0])];
static _Atomic int markers_ready;

void ef_recognize_init(void)
{
	Dl_info info;
	int saved = errno;

	for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++) {
		void *sym = dlsym(RTLD_DEFAULT, markers[i].symbol);
		if (sym && dladdr(sym, &info))
			atomic_store_explicit(&marker_base[i], info.dli_fbase, memory_order_relaxed);
	}
	errno = saved;
	atomic_store_explicit(&markers_ready, 1, memory_order_release);
}

static enum ef_runtime classify(const void *ra)
{
	Dl_info caller;

	if (!dladdr(ra, &caller) || !caller.dli_fbase)
		return EF_RT_UNKNOWN;
	/* JNI code (libnio's Java_sun_nio_ch_EPoll_wait) is exported by name. */
	if (caller.dli_sname && strncmp(caller.dli_sname, "Java_", 5) == 0)
		return EF_RT_JAVA;
	for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++)
		if (atomic_load_explicit(&marker_base[i], memory_order_relaxed) == caller.dli_fbase)
			return markers[i].rt;
	return EF_RT_UNKNOWN;
}

/* Call sites are few (one per event loop); a small table shared by all
 * threads. A full table just means asking the loader again. */
#define SITES 32
static struct {
	_Atomic(const void *) ra;
	_Atomic int rt;
} sites[SITES];
static _Atomic unsigned seen;

enum ef_runtime ef_caller_runtime(const void *ra)
{
	for (unsigned i = 0; i < SITES; i++) {
		const void *s = atomic_load_explicit(&sites[i].ra, memory_order_acquire);
		if (s == ra)
			return (enum ef_runtime)atomic_load_explicit(&sites[i].rt, memory_order_relaxed);
		if (!s)
			break;
	}
	/* Before the constructor the markers are unknown: answer without caching. */
	if (!atomic_load_explicit(&markers_ready, memory_order_acquire))
		return EF_RT_UNKNOWN;
	int saved = errno;
	enum ef_runtime rt = classify(ra);
	errno = saved;
	atomic_fetch_or_explicit(&seen, 1u << rt, memory_order_relaxed);
	for (unsigned i = 0; i < SITES; i++) {
		const void *expected = NULL;
		if (atomic_load_explicit(&sites[i].ra, memory_order_relaxed) == ra)
			break;
		/* Claim an empty slot with a marker, fill it, then publish the site. */
		if (atomic_compare_exchange_strong(&sites[i].ra, &expected, (const void *)&sites[i])) {
			atomic_store_explicit(&sites[i].rt, rt, memory_order_relaxed);
			atomic_store_explicit(&sites[i].ra, ra, memory_order_release);
			break;
		}
	}
	return rt;
}

unsigned ef_runtimes_seen(void)
{
	return atomic_load_explicit(&seen, memory_order_relaxed) & ~(1u << EF_RT_UNKNOWN);
}
