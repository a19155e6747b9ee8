/* Who called epoll_wait, judged once per call site from the code at the call's
 * return address: the event loop whose object it is (loops whose clocks or
 * APIs work in whole milliseconds mean their 1 ms: libuv and Node.js, nginx,
 * libevent, Java NIO), or what EPOLLFIX_GENUINE_CALLERS and
 * EPOLLFIX_SUBMS_CALLERS say about that object. This only classifies; the
 * policy decides what each class gets. */
#ifndef EPOLLFIX_RECOGNIZE_H
#define EPOLLFIX_RECOGNIZE_H

#include <stdint.h>

#include "live.h" /* enum ef_runtime */

/* Whether a class means its 1 ms: every recognised runtime and the listed
 * genuine callers. EF_RT_UNKNOWN is for the learner to judge; EF_RT_USER_SUBMS
 * is never genuine, whatever is learned. */
static inline int ef_runtime_genuine(enum ef_runtime rt)
{
	return rt != EF_RT_UNKNOWN && rt != EF_RT_USER_SUBMS;
}

/* The lists of EPOLLFIX_GENUINE_CALLERS and EPOLLFIX_SUBMS_CALLERS, as read
 * with the configuration (kept, not copied: they must stay). */
void ef_recognize_lists(const char *genuine_callers, const char *subms_callers);

/* Reads the program's path (constructor: before it, answers are given but not
 * cached). */
void ef_recognize_init(void);

/* The class of the call site at return address ra. The first call from a site
 * finds its object with dl_iterate_phdr and reads the object's dynamic symbols
 * in memory (no allocation, no dlsym), so objects loaded at any time are
 * recognised; later calls hit a cache. */
enum ef_runtime ef_caller_runtime(const void *ra);

/* Bit (1 << rt) for every class seen so far but EF_RT_UNKNOWN, for the report. */
unsigned ef_runtimes_seen(void);

/* For the status block (live.h): the address of those bits (an _Atomic unsigned). */
uint64_t ef_runtimes_live(void);

#endif
