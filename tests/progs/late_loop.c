/* An event loop loaded after start-up, as uvloop and gevent's libuv loop are
 * (Python extensions with libuv built in, imported late): built as
 * libef-late-uv.so, which defines uv_run like them, and as libef-late-plain.so,
 * which does not. Each exported function makes n epoll_wait(ep, ..., 1) calls
 * itself, so each is its own call site:
 *   late_wait          a plain function, with epoll_wait
 *   Java_ef_Late_wait  named as JNI code is, for the Java NIO rule; it calls
 *                      epoll_pwait, or the compiler would fold the two into one
 * Each returns the median elapsed time of its waits in ns. */
#include "clock.h"

#include <sys/epoll.h>

#ifdef EF_DEFINE_UV_RUN
int uv_run(void *loop, int mode);
int uv_run(void *loop, int mode)
{
	(void)loop;
	return mode;
}
#endif

/* Inlined, so the calls come from the exported function's own code. */
static inline __attribute__((always_inline)) int64_t waits(int ep, int n, int pwait)
{
	struct epoll_event ev;
	int64_t ns[1000];

	if (n > 1000)
		n = 1000;
	for (int i = 0; i < n; i++) {
		int64_t t = now_ns();
		if (pwait)
			epoll_pwait(ep, &ev, 1, 1, NULL);
		else
			epoll_wait(ep, &ev, 1, 1);
		ns[i] = now_ns() - t;
	}
	qsort(ns, (size_t)n, sizeof(ns[0]), cmp_i64);
	return ns[n / 2];
}

int64_t late_wait(int ep, int n);
int64_t late_wait(int ep, int n)
{
	return waits(ep, n, 0);
}

int64_t Java_ef_Late_wait(int ep, int n);
int64_t Java_ef_Late_wait(int ep, int n)
{
	return waits(ep, n, 1);
}
