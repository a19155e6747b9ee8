/* Processes: the library keeps working, and keeps out of the way, across fork,
 * vfork, exec and dlopen.
 *
 *   ef-proc measure [pwait]    40 1 ms waits: "median_us=N min_us=N ..."
 *   ef-proc fork N             threads wait (1 ms) and change the policy at
 *                              run time while the main thread forks N times;
 *                              every child measures its own waits and changes
 *                              the policy once; prints the children's medians
 *                              and the longest of their shortest waits
 *   ef-proc vfork-exec PROG... waits, then vfork + exec of PROG (and the same
 *                              with posix_spawn); exit status of PROG
 *   ef-proc exec PROG...       waits, then exec PROG
 *   ef-proc dlopen LIB         dlopen LIB and measure with its function
 *   ef-proc fork-probe N       under a seccomp filter that allows everything (so
 *                              the library probes epoll_pwait2 in a child), one
 *                              thread makes the first 1 ms wait while the main
 *                              thread forks; N rounds, each a fresh exec; prints
 *                              how many children could not upgrade
 *   ef-proc clone-set N        a thread changes the policy at run time while
 *                              the main thread makes N children by a raw clone
 *                              system call (no atfork handler runs there); each
 *                              changes the policy once: "children=N hung=H
 *                              failed=F" (hung: still waiting after 2 s) */
#include "hard.h"
#include "seccomp_filter.h"

#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>

extern char **environ;

static atomic_int quit;
static int shared_ep;

static void *busy_waiter(void *arg)
{
	(void)arg;
	struct epoll_event out[2];
	while (!atomic_load(&quit))
		epoll_wait(shared_ep, out, 2, 1);
	return NULL;
}

typedef int (*set_fn)(const char *, char *, size_t);

static void *policy_writer(void *arg)
{
	set_fn set = (set_fn)arg;
	for (unsigned i = 0; !atomic_load(&quit); i++)
		set(i % 2 ? "subms=50us" : "subms=60us", NULL, 0);
	return NULL;
}

static int fork_threads(int n)
{
	shared_ep = idle_epoll();
	set_fn set;
	*(void **)&set = dlsym(RTLD_DEFAULT, "epollfix_set");
	pthread_t t[4];
	int nt = 0;
	for (; nt < 3; nt++)
		pthread_create(&t[nt], NULL, busy_waiter, NULL);
	if (set) /* a writer forever inside the seqlock's critical section, statistically */
		pthread_create(&t[nt++], NULL, policy_writer, (void *)set);
	long lo = 1L << 30, hi = -1, hi_min = -1;
	int ok = 0;
	for (int i = 0; i < n; i++) {
		int p[2];
		if (pipe(p))
			return 2;
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			alarm(20); /* a child that hangs (a lock held at fork) dies */
			if (set && set("subms=50us", NULL, 0) != 0)
				_exit(3);
			long m[2];
			m[0] = median_wait_us(idle_epoll(), i % 2, 1, 40, &m[1]);
			if (write(p[1], m, sizeof(m)) != sizeof(m))
				_exit(4);
			_exit(m[0] < 0 ? 5 : 0);
		}
		close(p[1]);
		long mm[2] = { -1, -1 }, m, min;
		int status;
		if (read(p[0], mm, sizeof(mm)) != sizeof(mm))
			mm[0] = -1;
		m = mm[0];
		min = mm[1];
		close(p[0]);
		waitpid(pid, &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && m >= 0) {
			if (m > 500) /* for diagnosis: which child did not upgrade */
				printf("child %d: median %ld\n", i, m);
			ok++;
			lo = m < lo ? m : lo;
			hi = m > hi ? m : hi;
			hi_min = min > hi_min ? min : hi_min;
		} else {
			printf("child %d: status %#x median %ld\n", i, status, m);
		}
	}
	atomic_store(&quit, 1);
	for (int i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	printf("children=%d ok=%d child_min_median_us=%ld child_max_median_us=%ld "
	       "child_max_min_us=%ld\n",
	       n, ok, lo, hi, hi_min);
	return ok == n ? 0 : 1;
}

static int clone_set(int n)
{
	set_fn set;
	*(void **)&set = dlsym(RTLD_DEFAULT, "epollfix_set");
	if (!set) {
		printf("library=absent\n");
		return 0;
	}
	/* A writer inside the configuration's lock most of the time: a child
	 * made then has the lock held by a thread it does not have. */
	pthread_t t;
	pthread_create(&t, NULL, policy_writer, (void *)set);
	int hung = 0, failed = 0;
	for (int i = 0; i < n; i++) {
		pid_t pid = (pid_t)syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
		if (pid == 0) {
			alarm(2);
			_exit(set("subms=70us", NULL, 0) == 0 ? 0 : 3);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			failed++;
		else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
			hung++;
		else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	atomic_store(&quit, 1);
	pthread_join(t, NULL);
	printf("children=%d hung=%d failed=%d\n", n, hung, failed);
	return 0;
}

static int run_child(char **argv, int use_vfork)
{
	pid_t pid;
	int status;
	if (use_vfork) {
		pid = vfork();
		if (pid == 0) {
			execv(argv[0], argv);
			_exit(127);
		}
	} else if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ)) {
		return 127;
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 126;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A filter that allows every call: seccomp mode 2, nothing refused. */
static int allow_all(void)
{
	struct ef_sock_filter f[] = { { EF_BPF_RET_K, 0, 0, EF_RET_ALLOW } };
	struct ef_sock_fprog prog = { 1, f };
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, 2, &prog, 0, 0);
}

static atomic_int first_done;
static void *first_wait(void *arg)
{
	struct epoll_event out[2];
	epoll_wait((int)(intptr_t)arg, out, 2, 1);
	atomic_store(&first_done, 1);
	return NULL;
}

/* One round: children forked while the first upgraded wait probes. */
static int fork_probe_round(void)
{
	alarm(60);
	if (allow_all())
		return 2;
	int ep = idle_epoll(), p[2];
	if (pipe(p))
		return 2;
	pthread_t t;
	pthread_create(&t, NULL, first_wait, (void *)(intptr_t)ep);
	int children = 0, slow = 0;
	while (!atomic_load(&first_done) && children < 50) {
		pid_t pid = fork();
		if (pid == 0) {
			alarm(20);
			/* Stuck (never upgraded): every wait 1 ms or more. Load
			 * lengthens waits, so the shortest judges, not the median. */
			long m;
			if (median_wait_us(idle_epoll(), 0, 1, 20, &m) < 0)
				_exit(5);
			if (write(p[1], &m, sizeof(m)) != sizeof(m))
				_exit(4);
			_exit(0);
		}
		children++;
	}
	pthread_join(t, NULL);
	close(p[1]); /* a child that dies without answering ends the reads */
	long parent = median_wait_us(ep, 0, 1, 20, NULL);
	int answered = 0, failed = 0;
	for (long m; read(p[0], &m, sizeof(m)) == sizeof(m); answered++)
		slow += m > 900;
	for (int i = 0; i < children; i++) {
		int status;
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			fprintf(stderr, "fork-probe: a child ended with status %#x\n", status);
			failed++;
		}
	}
	printf("children=%d slow=%d parent_median_us=%ld\n", children,
	       slow + failed + (children - answered), parent);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "fork-probe-round"))
		return fork_probe_round();
	if (!strcmp(mode, "fork-probe")) {
		int n = argc > 2 ? atoi(argv[2]) : 10, slow = 0, children = 0;
		for (int i = 0; i < n; i++) {
			/* A fresh process each round (no sh: under musl it would get
			 * a musl library preloaded into a glibc shell). */
			int out[2], c = 0, s = 0;
			char text[256];
			if (pipe(out))
				return 2;
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0) {
				dup2(out[1], 1);
				execl("/proc/self/exe", argv[0], "fork-probe-round", (char *)NULL);
				_exit(127);
			}
			close(out[1]);
			ssize_t len = 0, k;
			while (len < (ssize_t)sizeof(text) - 1 &&
			       (k = read(out[0], text + len, sizeof(text) - 1 - (size_t)len)) > 0)
				len += k;
			text[len > 0 ? len : 0] = '\0';
			close(out[0]);
			int status;
			waitpid(pid, &status, 0);
			if (sscanf(text, "children=%d slow=%d", &c, &s) != 2 || !WIFEXITED(status) ||
			    WEXITSTATUS(status)) {
				fprintf(stderr, "fork-probe: round %d: status %#x: %s\n", i, status, text);
				return 2;
			}
			children += c;
			slow += s;
		}
		printf("rounds=%d children=%d stuck=%d\n", n, children, slow);
		return 0;
	}
	if (!strcmp(mode, "measure")) {
		int pw = argc > 2 && !strcmp(argv[2], "pwait");
		long min, m = median_wait_us(idle_epoll(), pw, 1, 40, &min);
		printf("median_us=%ld min_us=%ld ", m, min);
		print_counters();
		printf("\n");
		return m < 0;
	}
	if (!strcmp(mode, "fork"))
		return fork_threads(argc > 2 ? atoi(argv[2]) : 20);
	if (!strcmp(mode, "clone-set"))
		return clone_set(argc > 2 ? atoi(argv[2]) : 20);
	if (argc > 2 && (!strcmp(mode, "vfork-exec") || !strcmp(mode, "exec"))) {
		/* The library is in use here first (probed, threads running). */
		shared_ep = idle_epoll();
		pthread_t t;
		pthread_create(&t, NULL, busy_waiter, NULL);
		if (median_wait_us(shared_ep, 0, 1, 10, NULL) < 0)
			return 2;
		fflush(stdout);
		if (!strcmp(mode, "exec")) {
			execv(argv[2], argv + 2);
			perror("execv");
			return 127;
		}
		int a = run_child(argv + 2, 1), b = run_child(argv + 2, 0);
		atomic_store(&quit, 1);
		pthread_join(t, NULL);
		printf("vfork: %d posix_spawn: %d\n", a, b);
		return a || b;
	}
	if (!strcmp(mode, "dlopen") && argc > 2) {
		void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
		long (*fn)(int, long *), min;
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 2;
		}
		*(void **)&fn = dlsym(h, "ef_dl_median_us");
		if (!fn)
			return 2;
		long m = fn(40, &min);
		printf("median_us=%ld min_us=%ld\n", m, min);
		dlclose(h);
		return m < 0;
	}
	fprintf(stderr, "usage: %s measure [pwait]|fork N|clone-set N|vfork-exec PROG...|exec PROG...|dlopen LIB\n",
		argv[0]);
	return 2;
}
