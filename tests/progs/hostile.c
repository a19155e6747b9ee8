/* A process that shows hostile data to `epollfix status`:
 *
 *   ef-hostile NAME [LIBRARY]
 *
 * Names itself NAME (PR_SET_NAME: any user may, escape sequences included).
 * With LIBRARY (a copy of libef-late-plain.so the test may spoil), it loads
 * it, waits in it (so a call site of the report lies in that file), then
 * rewrites the file in place: its .dynsym claims to run to the end of a
 * sparse 1 GiB file, whose symbols a reader would read for minutes. Then it
 * prints "ready" and makes 1 ms waits until killed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

#define HUGE_FILE (1LL << 30)

static int spoil(const char *path)
{
	Elf64_Ehdr h;
	Elf64_Shdr names, s;
	char name[16];
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0 || pread(fd, &h, sizeof(h), 0) != sizeof(h) ||
	    pread(fd, &names, sizeof(names), (off_t)(h.e_shoff + h.e_shstrndx * sizeof(s))) !=
		    sizeof(names))
		return -1;
	for (unsigned i = 1; i < h.e_shnum; i++) {
		off_t at = (off_t)(h.e_shoff + i * sizeof(s));
		if (pread(fd, &s, sizeof(s), at) != sizeof(s) ||
		    pread(fd, name, sizeof(name), (off_t)(names.sh_offset + s.sh_name)) <= 0 ||
		    strcmp(name, ".dynsym") != 0)
			continue;
		s.sh_size = (uint64_t)HUGE_FILE - s.sh_offset;
		s.sh_size -= s.sh_size % sizeof(Elf64_Sym);
		if (pwrite(fd, &s, sizeof(s), at) != sizeof(s) || ftruncate(fd, HUGE_FILE) != 0)
			return -1;
		return close(fd);
	}
	return -1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: ef-hostile NAME [LIBRARY]\n");
		return 2;
	}
	prctl(PR_SET_NAME, argv[1], 0, 0, 0);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev;
	if (argc > 2) {
		void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
		int64_t (*late_wait)(int, int) =
			lib ? (int64_t(*)(int, int))(uintptr_t)dlsym(lib, "late_wait") : NULL;
		if (!late_wait || (late_wait(ep, 5), spoil(argv[2])) != 0) {
			fprintf(stderr, "ef-hostile: %s: %s\n", argv[2], lib ? "cannot spoil" : dlerror());
			return 1;
		}
	}
	epoll_wait(ep, &ev, 1, 1);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		epoll_wait(ep, &ev, 1, 1);
}
