/* The library's life in a process: the constructor, the fork handler and the
 * exit report's trigger. Only this file calls into every other part at once;
 * none of them calls back, so the objects of src/ depend on each other without
 * a cycle (scripts/check-deps checks it). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "fmt.h"
#include "live.h"
#include "log.h"
#include "ration.h"
#include "real.h"
#include "recognize.h"
#include "sandbox.h"
#include "state.h"
#include "stats.h"

/* A warning or debug line goes to stderr only while every filter the library
 * read allows write (sandbox.h): a program that forbids itself writing is
 * never killed for one. */
static void log_line(const struct ef_buf *line)
{
	if (!(ef_sandbox_denied() & EF_DENY_WRITE))
		ef_buf_write(line, STDERR_FILENO);
}

__attribute__((constructor)) static void epollfix_init(void)
{
	ef_log_sink(log_line);
	ef_state_load();
	ef_seccomp_go_filter(ef_state_env(EF_GO_FILTER_ENV));
	ef_real_init();
	ef_filters_init();
	struct ef_config c;
	int on = !ef_fast_disabled() && ef_state_config(&c) && !c.disable;
	char answer[128];
	const char *handed = ef_state_env(EF_PROBED_ENV);
	if (ef_pwait2_early(on, on ? (int)c.seccomp : 0, on ? c.slack_ns : 0, handed, answer,
			    sizeof(answer)) &&
	    !ef_state_secure()) {
		/* For the programs its children exec: this process's answer, or
		 * none (one it could not take names no process they could be). */
		if (answer[0])
			setenv(EF_PROBED_ENV, answer, 1);
		else if (handed)
			unsetenv(EF_PROBED_ENV);
	}
	ef_stats_prepare();
	ef_recognize_init();
	ef_live_init();
	ef_interpose_init();
	pthread_atfork(ef_interpose_before_fork, NULL, ef_interpose_child);
}

__attribute__((destructor)) static void epollfix_fini(void)
{
	ef_interpose_notice_child();
	ef_stats_report();
}
