/* The library loaded with dlopen (as Python's epollfix.enable() loads it)
 * never closes, reads or keeps a file descriptor the program could own:
 *
 *   ef-dl-fds LIB daemon LOGDIR   closefrom(3) at start, waits in the main
 *                                 thread and a second one, closefrom(3) again
 *                                 and two logs opened on the lowest numbers;
 *                                 a fork child writes to one, the main thread
 *                                 to the other after the second thread ends
 *   ef-dl-fds LIB dup2            waits, a socket dup2'd onto fd 3 (as socket
 *                                 activation does): a fork child writes to it
 *   ef-dl-fds LIB pipe|kmsg       waits, a pipe (or /dev/kmsg) on the lowest
 *                                 number, more waits: what it holds is still
 *                                 there to read
 *   ef-dl-fds LIB threads ROUNDS N KEYS
 *                                 KEYS pthread keys made before the dlopen,
 *                                 then ROUNDS rounds of N threads alive
 *                                 together, each making a few waits: the fds
 *                                 open before and after
 *   ef-dl-fds LIB nofile          RLIMIT_NOFILE 64, 44 fds held, 16 threads
 *                                 waiting: 12 opens the program has room for
 *   ef-dl-fds LIB emfile          waits with no fd free (EMFILE), then waits
 *                                 with some: both sets counted as exact;
 *                                 a run's end with none free again: the
 *                                 thread's own timer slack is back after.
 *                                 The lines "ef-dl-fds: no fd free" and
 *                                 "ef-dl-fds: fds free" on stderr part the
 *                                 library's debug lines of the two sets
 *
 * Each prints NAME=VALUE words; the waits are 50 us ones through
 * epollfix_epoll_wait_ns on an idle epoll fd, and "exact" counts those the
 * library made exact (its hinted counter: a wait whose deadline passed before
 * it was made, as a thread preempted for 50 us does, is an exact poll, which
 * needs no epoll_pwait2). Exit 0 unless the setup failed. */
#define _GNU_SOURCE
#include "hard.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "epollfix.h"

static int (*wait_ns)(int, struct epoll_event *, int, int64_t);
static int (*counters)(struct epollfix_counters *, size_t);
static int ep = -1;

static void die(const char *what)
{
	fprintf(stderr, "ef-dl-fds: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint64_t exact(void)
{
	struct epollfix_counters c;
	return counters(&c, sizeof(c)) == 0 ? c.hinted : 0;
}

/* n waits on the idle epoll fd, each timing out with errno untouched. */
static void waits(int n)
{
	struct epoll_event out[4];
	for (int i = 0; i < n; i++) {
		errno = 4321;
		if (wait_ns(ep, out, 4, 50000) != 0 || errno != 4321) {
			fprintf(stderr, "ef-dl-fds: a wait on an idle fd did not time out cleanly\n");
			exit(1);
		}
	}
}

/* fd moved to a number at least min, close-on-exec: the lowest numbers stay
 * free for what the test places there. */
static int high(int fd, int min)
{
	int h = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, min);
	if (h < 0)
		die("F_DUPFD");
	close(fd);
	return h;
}

/* An epoll fd watching the read end of a pipe nobody writes to, at min or above. */
static void idle_epoll_at(int min)
{
	int fds[2];
	if (pipe(fds))
		die("pipe");
	ep = high(epoll_create1(EPOLL_CLOEXEC), min);
	int r = high(fds[0], min);
	high(fds[1], min); /* kept open: the pipe stays idle, never at end of file */
	struct epoll_event ev = { .events = EPOLLIN };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, r, &ev))
		die("epoll_ctl");
}

static void closefrom3(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	for (long fd = 3; fd < (long)rl.rlim_cur && fd < 65536; fd++)
		close((int)fd);
}

static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0;
	if (!d)
		die("/proc/self/fd");
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the directory's own fd */
}

static void load(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h || !(*(void **)&wait_ns = dlsym(h, "epollfix_epoll_wait_ns")) ||
	    !(*(void **)&counters = dlsym(h, "epollfix_counters"))) {
		fprintf(stderr, "ef-dl-fds: %s\n", dlerror());
		exit(2);
	}
}

/* Everything closed, as a daemon reopening its files does; the epoll fd again. */
static void reopen(void)
{
	closefrom3();
	idle_epoll_at(200);
}

/* ---- a daemon that closes every fd and opens its logs ---------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;

static void wait_stage(int s)
{
	pthread_mutex_lock(&mu);
	while (stage < s)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

static void set_stage(int s)
{
	pthread_mutex_lock(&mu);
	stage = s;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void *second_thread(void *arg)
{
	(void)arg;
	waits(20);
	set_stage(1);
	wait_stage(2); /* the logs are open */
	waits(20);
	return NULL;
}

static int open_log(const char *dir, const char *name, int want)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd != want) {
		fprintf(stderr, "ef-dl-fds: %s opened on %d, not %d\n", path, fd, want);
		exit(2);
	}
	return fd;
}

static int same_file(int fd, const struct stat *was)
{
	struct stat now;
	return fstat(fd, &now) == 0 && now.st_ino == was->st_ino && now.st_dev == was->st_dev;
}

static int daemon_run(const char *dir)
{
	pthread_t t;
	idle_epoll_at(200);
	waits(20);
	if (pthread_create(&t, NULL, second_thread, NULL))
		die("pthread_create");
	wait_stage(1);
	/* Reopening its logs, as a daemon does on SIGHUP: everything closed,
	 * then opened on the lowest numbers. */
	reopen();
	int child_log = open_log(dir, "child.log", 3), main_log = open_log(dir, "main.log", 4);
	struct stat child_st, main_st;
	if (fstat(child_log, &child_st) || fstat(main_log, &main_st))
		die("fstat");
	uint64_t before = exact();
	waits(20);
	uint64_t after = exact() - before;

	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		_exit(write(child_log, "child\n", 6) == 6 ? 0 : 1);
	int st;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	set_stage(2);
	pthread_join(t, NULL); /* its end closes nothing of the program's */
	int main_ok = write(main_log, "main\n", 5) == 5 && same_file(main_log, &main_st) &&
		      same_file(child_log, &child_st);
	printf("child_write=%s main_write=%s after_exact=%llu\n",
	       WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "failed", main_ok ? "ok" : "failed",
	       (unsigned long long)after);
	return 0;
}

/* ---- a socket dup2'd onto fd 3 ---------------------------------------------- */

static int dup2_run(void)
{
	int sv[2];
	idle_epoll_at(200);
	waits(20);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		die("socketpair");
	int mine = high(sv[0], 200);
	if (dup2(high(sv[1], 200), 3) != 3)
		die("dup2");
	waits(20);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		_exit(write(3, "x", 1) == 1 ? 0 : 1);
	int st;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	char c = 0;
	int got = WIFEXITED(st) && WEXITSTATUS(st) == 0 && read(mine, &c, 1) == 1 && c == 'x';
	printf("child_write=%s\n", got ? "ok" : "failed");
	return 0;
}

/* ---- what a file on the lowest number holds stays its own ---------------- */

static int pipe_run(void)
{
	int fds[2];
	idle_epoll_at(200);
	waits(20);
	reopen();
	if (pipe(fds))
		die("pipe");
	if (write(fds[1], "kept", 4) != 4)
		die("write");
	uint64_t before = exact();
	waits(20);
	uint64_t after = exact() - before;
	char buf[8] = "";
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
	printf("fd=%d read=%s after_exact=%llu\n", fds[0], n == 4 && !memcmp(buf, "kept", 4) ? "kept" : "lost",
	       (unsigned long long)after);
	return 0;
}

/* One record of /dev/kmsg: the kernel hands each reader's fd the records in
 * turn, so a read by anyone else moves this fd on. */
static ssize_t record(int fd, char *buf, size_t size)
{
	for (int tries = 0; tries < 3; tries++) {
		ssize_t n = read(fd, buf, size - 1);
		if (n >= 0 || errno != EPIPE) /* EPIPE: overwritten meanwhile, the next one */
			return n;
	}
	return -1;
}

static int kmsg_run(void)
{
	idle_epoll_at(200);
	waits(20);
	reopen();
	/* Two readers from the first record: the one on the lowest number,
	 * and one the library cannot have seen. */
	int low = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (low < 0) {
		printf("kmsg=unreadable\n");
		return 0;
	}
	int ref = high(open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC), 200);
	waits(20);
	char a[8192], b[8192];
	ssize_t na = record(low, a, sizeof(a)), nb = record(ref, b, sizeof(b));
	printf("fd=%d first_record=%s\n", low,
	       na > 0 && na == nb && !memcmp(a, b, (size_t)na) ? "kept" : "consumed");
	return 0;
}

/* ---- many threads, and a library whose pthread key is not among the first 32 */

static pthread_barrier_t all_waited;

static void *round_thread(void *arg)
{
	(void)arg;
	waits(3);
	pthread_barrier_wait(&all_waited); /* all alive together */
	return NULL;
}

static int threads_run(int rounds, int n, int keys, const char *lib)
{
	pthread_key_t k;
	for (int i = 0; i < keys; i++)
		if (pthread_key_create(&k, NULL))
			die("pthread_key_create");
	load(lib);
	idle_epoll_at(200);
	waits(5);
	long start = open_fds();
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	uint64_t before = exact();
	for (int r = 0; r < rounds; r++) {
		if (!t || pthread_barrier_init(&all_waited, NULL, (unsigned)n))
			die("barrier");
		for (int i = 0; i < n; i++)
			if (pthread_create(&t[i], &attr, round_thread, NULL))
				die("pthread_create");
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&all_waited);
	}
	printf("threads=%d leaked=%ld exact=%llu\n", rounds * n, open_fds() - start,
	       (unsigned long long)(exact() - before));
	free(t);
	return 0;
}

/* ---- RLIMIT_NOFILE 64, 44 fds held, 16 threads waiting ---------------------- */

static _Atomic int stop;
static _Atomic int started;

static void *busy_waiter(void *arg)
{
	(void)arg;
	waits(3);
	started++;
	while (!stop)
		waits(1);
	return NULL;
}

static int nofile_run(void)
{
	struct rlimit rl = { 64, 64 };
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = 64;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		die("setrlimit");
	idle_epoll_at(40);
	while (open_fds() < 44)
		if (open("/dev/null", O_RDONLY | O_CLOEXEC) < 0)
			die("filling to 44 fds");
	pthread_t t[16];
	for (int i = 0; i < 16; i++)
		if (pthread_create(&t[i], NULL, busy_waiter, NULL))
			die("pthread_create");
	waits(3);
	while (started < 16)
		waits(1);
	/* 44 + 12 = 56 of 64: room for all without the library. */
	int emfile = 0, held = 0;
	for (int i = 0; i < 12; i++) {
		if (open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0)
			held++;
		else if (errno == EMFILE)
			emfile++;
	}
	stop = 1;
	for (int i = 0; i < 16; i++)
		pthread_join(t[i], NULL);
	printf("opened=%d emfile=%d\n", held, emfile);
	return 0;
}

/* ---- a moment without a free fd -------------------------------------------- */

static int emfile_run(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	struct rlimit tight = rl;
	tight.rlim_cur = 48;
	if (setrlimit(RLIMIT_NOFILE, &tight))
		die("setrlimit");
	idle_epoll_at(40);
	int fill[64], n = 0;
	while (n < 64 && (fill[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	if (n == 64 || errno != EMFILE)
		die("filling every fd");
	int own = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	fprintf(stderr, "ef-dl-fds: no fd free\n");
	waits(20);
	uint64_t full = exact();
	for (int i = 0; i < n; i++)
		close(fill[i]);
	fprintf(stderr, "ef-dl-fds: fds free\n");
	waits(20);
	uint64_t after = exact() - full;
	/* The run's end puts the thread's own slack back; with no fd free to
	 * check first, the next call does. */
	for (int i = 0; i < n; i++)
		if ((fill[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
			die("filling again");
	struct epoll_event out[4];
	wait_ns(ep, out, 4, 0);
	for (int i = 0; i < n; i++)
		close(fill[i]);
	wait_ns(ep, out, 4, 0);
	printf("emfile_exact=%llu after_exact=%llu slack=%s\n", (unsigned long long)full,
	       (unsigned long long)after,
	       prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0) == own ? "own" : "library's");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ef-dl-fds LIB daemon DIR|dup2|pipe|kmsg|nofile|emfile|"
				"threads ROUNDS N KEYS\n");
		return 2;
	}
	const char *what = argv[2];
	if (!strcmp(what, "threads") && argc == 6)
		return threads_run(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), argv[1]);
	/* A daemon's start: nothing but 0, 1 and 2 open, so the numbers it
	 * takes from here on are known. */
	closefrom3();
	load(argv[1]);
	if (!strcmp(what, "daemon") && argc == 4)
		return daemon_run(argv[3]);
	if (!strcmp(what, "dup2"))
		return dup2_run();
	if (!strcmp(what, "pipe"))
		return pipe_run();
	if (!strcmp(what, "kmsg"))
		return kmsg_run();
	if (!strcmp(what, "nofile"))
		return nofile_run();
	if (!strcmp(what, "emfile"))
		return emfile_run();
	fprintf(stderr, "ef-dl-fds: unknown test '%s'\n", what);
	return 2;
}
