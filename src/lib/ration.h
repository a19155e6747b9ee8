/* The cost ceiling: the wake-ups the library may add, per second, per process
 * (ration.c). */
#ifndef EPOLLFIX_RATION_H
#define EPOLLFIX_RATION_H

#include <stdint.h>

/* 1 when one more wake-up may be added now (per_s a second; <= 0: no limit),
 * and it is counted; 0 when the ceiling is reached. Lock-free. */
int ef_ration_take(int64_t per_s, int64_t now_ns);

/* In a fork child: a process of its own, with a ceiling of its own (the
 * parent's threads may have spent the one it copied). */
void ef_ration_after_fork(void);

#endif
