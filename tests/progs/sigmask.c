/* epoll_pwait keeps its signal mask semantics: SIGUSR1 is blocked outside the
 * wait and unblocked by the mask given to epoll_pwait. A pending SIGUSR1 must
 * not run its handler before the wait, and must interrupt the wait with EINTR,
 * its handler having run. Repeated for both a pending signal and one sent from
 * another thread while the loop waits with 1 ms timeouts (the upgraded ones).
 * Exits 0 when every round behaved; prints what it saw. */
#define _GNU_SOURCE

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static void on_usr1(int sig) { (void)sig; handled++; }

static pthread_t main_thread;
static atomic_int waits; /* the main thread's waits that ended in a timeout */

/* Sends once the main thread is in its loop of waits, 3 ms after its first
 * ended: a loaded machine may run the main thread late, never the sender
 * before it. */
static void *sender(void *arg)
{
	(void)arg;
	struct timespec d = { 0, 3 * 1000 * 1000 }, poll = { 0, 100 * 1000 };
	while (atomic_load(&waits) == 0)
		nanosleep(&poll, NULL);
	nanosleep(&d, NULL);
	pthread_kill(main_thread, SIGUSR1);
	return NULL;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	sigaction(SIGUSR1, &sa, NULL);
	sigset_t block, wait_mask;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, &wait_mask);
	sigdelset(&wait_mask, SIGUSR1);
	main_thread = pthread_self();

	int ep = epoll_create1(0), fds[2];
	if (ep < 0 || pipe(fds))
		return 1;
	struct epoll_event ev = { .events = EPOLLIN }, out[1];
	epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev);

	int bad = 0;
	for (int round = 0; round < 20; round++) {
		handled = 0;
		raise(SIGUSR1); /* pending, blocked */
		if (handled) {
			printf("round %d: handler ran while blocked\n", round);
			bad++;
		}
		int r = epoll_pwait(ep, out, 1, 1, &wait_mask);
		if (r != -1 || errno != EINTR || handled != 1) {
			printf("round %d: pending: epoll_pwait=%d errno=%d handled=%d\n", round, r,
			       errno, (int)handled);
			bad++;
		}
	}
	for (int round = 0; round < 5; round++) {
		pthread_t t;
		handled = 0;
		atomic_store(&waits, 0);
		pthread_create(&t, NULL, sender, NULL);
		int r;
		while ((r = epoll_pwait(ep, out, 1, 1, &wait_mask)) == 0)
			atomic_fetch_add(&waits, 1);
		pthread_join(t, NULL);
		if (r != -1 || errno != EINTR || handled != 1) {
			printf("round %d: sent: epoll_pwait=%d errno=%d handled=%d\n", round, r, errno,
			       (int)handled);
			bad++;
		}
	}
	printf("%s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
