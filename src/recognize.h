/* Which event loop called epoll_wait: recognised by the code at the call's
 * return address, once per call site. Loops whose clocks or APIs work in whole
 * milliseconds (libuv and Node.js, nginx, libevent, Java NIO) mean their 1 ms. */
#ifndef EPOLLFIX_RECOGNIZE_H
#define EPOLLFIX_RECOGNIZE_H

enum ef_runtime {
	EF_RT_UNKNOWN,
	EF_RT_LIBUV,
	EF_RT_NGINX,
	EF_RT_LIBEVENT,
	EF_RT_JAVA,
	EF_RT_COUNT
};

/* Looks the runtimes' marker symbols up (constructor: dlsym may allocate). */
void ef_recognize_init(void);

/* The runtime whose code contains return address ra. The first call from a
 * site asks dladdr (no allocation); later ones hit a cache. */
enum ef_runtime ef_caller_runtime(const void *ra);

const char *ef_runtime_name(enum ef_runtime rt);

/* Bit (1 << rt) for every runtime recognised so far, for the report. */
unsigned ef_runtimes_seen(void);

#endif
