/* The wake-up mechanism's ring buffers (agent_wake.h). */
#define _GNU_SOURCE
#include "agent_wake.h"

#include <sys/mman.h>
#include <unistd.h>

#include "agent_bpf.h"

static size_t page(void)
{
	static long p;
	if (!p)
		p = sysconf(_SC_PAGESIZE);
	return (size_t)p;
}

int ef_waker_open(struct ef_waker *w, const char **why)
{
	*w = EF_WAKER_NONE;
	w->ring = ef_abpf_waker_new();
	if (w->ring < 0) {
		*why = "the kernel refused a ring buffer";
		return -1;
	}
	void *cons = mmap(NULL, page(), PROT_READ | PROT_WRITE, MAP_SHARED, w->ring, 0);
	void *prod = mmap(NULL, page(), PROT_READ, MAP_SHARED, w->ring, (off_t)page());
	w->cons = cons == MAP_FAILED ? NULL : cons;
	w->prod = prod == MAP_FAILED ? NULL : prod;
	if (!w->cons || !w->prod) {
		ef_waker_close(w);
		*why = "the ring buffer could not be mapped";
		return -1;
	}
	return 0;
}

void ef_waker_close(struct ef_waker *w)
{
	if (w->cons)
		munmap(w->cons, page());
	if (w->prod)
		munmap((void *)w->prod, page());
	if (w->ring >= 0)
		close(w->ring);
	*w = EF_WAKER_NONE;
}

void ef_waker_drain(struct ef_waker *w)
{
	if (w->cons && w->prod)
		__atomic_store_n(w->cons, __atomic_load_n(w->prod, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
}
