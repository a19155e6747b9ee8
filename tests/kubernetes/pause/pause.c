/* The sandbox ("pause") container of the single-node cluster
 * (tests/kubernetes/cluster): none can be pulled here, so the cluster builds
 * this one, statically, into an image of its own. It holds the pod's
 * namespaces while the pod lives: it sleeps until told to stop, and as the
 * pod's PID 1 when the pod shares its process namespace it reaps the orphans
 * given to it, as Kubernetes' own pause does. */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig)
{
	(void)sig;
	_exit(0);
}

static void reap(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		continue;
}

int main(void)
{
	struct sigaction sa = {.sa_handler = stop};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = reap;
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	for (;;)
		pause();
}
