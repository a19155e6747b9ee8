/* A library whose constructor runs for a while, as a library that starts and
 * waits for threads while dlopen() loads it can: it tells the program it has
 * started (a byte on the first descriptor of EF_LATE_CTOR_FDS="W,R"), then
 * waits up to 5 s for a byte on the second. The loader holds its main lock
 * meanwhile (glibc). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void slow_init(void)
{
	const char *fds = getenv("EF_LATE_CTOR_FDS");
	int w, r;
	char c = 'x';

	if (!fds || sscanf(fds, "%d,%d", &w, &r) != 2)
		return;
	if (write(w, &c, 1) != 1)
		return;
	struct pollfd p = { .fd = r, .events = POLLIN };
	if (poll(&p, 1, 5000) == 1 && read(r, &c, 1) != 1)
		return;
}
