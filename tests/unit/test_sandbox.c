/* Seccomp filters read before they are in force: the classic-BPF reading must
 * give the kernel's verdict, and deny everything it cannot follow. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

#include "sandbox.h"
#include "seccomp_filter.h"

#define JSET_K 0x45

struct prog {
	struct ef_sock_filter f[32];
	unsigned n;
};

static void op(struct prog *p, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	p->f[p->n++] = (struct ef_sock_filter){ code, jt, jf, k };
}

/* arch check, then nr == NR gets ACTION, everything else ALLOW. */
static struct prog on(long nr, uint32_t action)
{
	struct prog p = { .n = 0 };
	op(&p, EF_BPF_LD_W_ABS, 0, 0, 4);
	op(&p, EF_BPF_JEQ_K, 1, 0, EF_AUDIT_ARCH);
	op(&p, EF_BPF_RET_K, 0, 0, EF_RET_KILL_PROCESS);
	op(&p, EF_BPF_LD_W_ABS, 0, 0, 0);
	op(&p, EF_BPF_JEQ_K, 0, 1, (uint32_t)nr);
	op(&p, EF_BPF_RET_K, 0, 0, action);
	op(&p, EF_BPF_RET_K, 0, 0, EF_RET_ALLOW);
	return p;
}

static unsigned verdict(struct prog *p, int *why)
{
	struct ef_sock_fprog fp = { (unsigned short)p->n, p->f };
	return ef_sandbox_verdict(&fp, 1000, why);
}

Test(sandbox, an_allow_list_that_names_the_calls_denies_nothing)
{
	struct prog p = on(SYS_mknodat, EF_RET_KILL_PROCESS);
	int why;
	cr_assert_eq(verdict(&p, &why), 0);
}

Test(sandbox, the_exit_reports_calls_are_judged_apart_from_the_waits)
{
	int why;
	struct prog p = on(SYS_openat, EF_RET_KILL_PROCESS);
	cr_assert_eq(verdict(&p, &why), EF_DENY_OPEN);
	p = on(SYS_close, EF_RET_ERRNO | EPERM);
	cr_assert_eq(verdict(&p, &why), EF_DENY_OPEN, "an errno answer loses the report's file too");
	p = on(SYS_write, EF_RET_KILL_PROCESS);
	cr_assert_eq(verdict(&p, &why), EF_DENY_WRITE);
	p = on(SYS_getpid, EF_RET_KILL_PROCESS);
	cr_assert_eq(verdict(&p, &why), EF_DENY_WRITE);
#ifdef SYS_open
	p = on(SYS_open, EF_RET_KILL_PROCESS); /* musl's open() */
	cr_assert_eq(verdict(&p, &why), EF_DENY_OPEN);
#endif
}

Test(sandbox, each_call_is_denied_by_the_action_on_it)
{
	int why;
	struct prog p = on(441, EF_RET_KILL_PROCESS);
	cr_assert_eq(verdict(&p, &why), EF_DENY_PWAIT2);
	cr_assert_eq(why, EF_WHY_FILTER_DENIES);
	p = on(441, EF_RET_ERRNO | EINVAL);
	cr_assert_eq(verdict(&p, &why), EF_DENY_PWAIT2, "an errno answer costs a failed call: denied");
	cr_assert_eq(why, EINVAL);
	p = on(SYS_prctl, EF_RET_KILL_PROCESS);
	cr_assert_eq(verdict(&p, &why), EF_DENY_SLACK);
	p = on(SYS_prctl, 0x7ffc0000u /* LOG */);
	cr_assert_eq(verdict(&p, &why), 0, "LOG allows");
}

Test(sandbox, arguments_are_read_prctl_options_apart)
{
	/* prctl(PR_SET_TIMERSLACK) killed, every other prctl allowed. */
	struct prog p = { .n = 0 };
	int why;
	op(&p, EF_BPF_LD_W_ABS, 0, 0, 0);
	op(&p, EF_BPF_JEQ_K, 0, 3, SYS_prctl);
	op(&p, EF_BPF_LD_W_ABS, 0, 0, 16); /* args[0] */
	op(&p, EF_BPF_JEQ_K, 0, 1, 29 /* PR_SET_TIMERSLACK */);
	op(&p, EF_BPF_RET_K, 0, 0, EF_RET_KILL_PROCESS);
	op(&p, EF_BPF_RET_K, 0, 0, EF_RET_ALLOW);
	cr_assert_eq(verdict(&p, &why), EF_DENY_SLACK);
	/* JSET on an argument: the kill-fork filter's shape, denies nothing here. */
	p.n = 0;
	op(&p, EF_BPF_LD_W_ABS, 0, 0, 0);
	op(&p, EF_BPF_JEQ_K, 0, 4, SYS_clone);
	op(&p, EF_BPF_LD_W_ABS, 0, 0, 16);
	op(&p, JSET_K, 0, 1, 0x10000);
	op(&p, EF_BPF_RET_K, 0, 0, EF_RET_ALLOW);
	op(&p, EF_BPF_RET_K, 0, 0, EF_RET_KILL_PROCESS);
	op(&p, EF_BPF_RET_K, 0, 0, EF_RET_ALLOW);
	cr_assert_eq(verdict(&p, &why), 0);
}

Test(sandbox, what_it_cannot_follow_denies_everything)
{
	int why;
	struct prog p = { .n = 0 };
	cr_assert_eq(verdict(&p, &why), EF_DENY_ALL, "empty");
	op(&p, EF_BPF_LD_W_ABS, 0, 0, 0);
	cr_assert_eq(verdict(&p, &why), EF_DENY_ALL, "falls off the end");
	p.n = 0;
	op(&p, EF_BPF_LD_W_ABS, 0, 0, 62); /* past seccomp_data's last word */
	op(&p, EF_BPF_RET_K, 0, 0, EF_RET_ALLOW);
	cr_assert_eq(verdict(&p, &why), EF_DENY_ALL, "a load out of range");
	p.n = 0;
	op(&p, EF_BPF_JEQ_K, 5, 5, 0); /* jumps past the end */
	op(&p, EF_BPF_RET_K, 0, 0, EF_RET_ALLOW);
	cr_assert_eq(verdict(&p, &why), EF_DENY_ALL, "a jump out of the program");
	p.n = 0;
	op(&p, 0x34 /* ALU|DIV|K */, 0, 0, 0);
	op(&p, EF_BPF_RET_K, 0, 0, EF_RET_ALLOW);
	cr_assert_eq(verdict(&p, &why), EF_DENY_ALL, "division by zero");
	p.n = 0;
	op(&p, 0xff, 0, 0, 0);
	op(&p, EF_BPF_RET_K, 0, 0, EF_RET_ALLOW);
	cr_assert_eq(verdict(&p, &why), EF_DENY_ALL, "an unknown instruction");
}

/* The mode from status text fed in chunks of `chunk` bytes; whole: read to its end. */
static int mode_in(const char *text, size_t n, size_t chunk, int whole)
{
	struct ef_proc_field f;
	char v[8];
	ef_proc_field_init(&f, "Seccomp", v, sizeof(v));
	for (size_t i = 0; i < n; i += chunk)
		ef_proc_field_feed(&f, text + i, i + chunk < n ? chunk : n - i);
	return ef_seccomp_mode_of(&f, whole);
}

Test(sandbox, seccomp_is_found_in_status_read_in_any_chunks)
{
	char text[20000];
	size_t n = (size_t)snprintf(text, sizeof(text), "Name:\tx\nGroups:\t");
	while (n < 15000)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%zu ", n);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n");
	for (size_t chunk = 1; chunk <= 512; chunk *= 2)
		cr_assert_eq(mode_in(text, n, chunk, 1), 2, "chunks of %zu", chunk);
	cr_assert_eq(mode_in("Name:\tx\nSeccomp:\t0\n", 19, 512, 1), 0);
	cr_assert_eq(mode_in("Name:\tx\nXSeccomp:\t2\n", 20, 512, 0), -1,
		     "only a whole field name counts");
	cr_assert_eq(mode_in("Name:\tx\nSeccomp_filters:\t2\n", 28, 512, 0), -1,
		     "only a whole field name counts");
}

/* A kernel built without CONFIG_SECCOMP writes no Seccomp: line: read to its
 * end, that says no filter can be in force, not that one cannot be read. */
Test(sandbox, no_seccomp_line_in_a_whole_status_means_no_filter)
{
	static const char text[] = "Name:\tx\nUmask:\t0022\nState:\tR (running)\nNoNewPrivs:\t0\n"
				   "Speculation_Store_Bypass:\tthread vulnerable\nCpus_allowed:\t3\n";
	for (size_t chunk = 1; chunk <= 512; chunk *= 2)
		cr_assert_eq(mode_in(text, sizeof(text) - 1, chunk, 1), 0, "chunks of %zu", chunk);
	/* A read that stopped early cannot tell. */
	cr_assert_eq(mode_in(text, sizeof(text) - 1, 512, 0), -1);
}

/* The reader finds any field of a real status file wherever it lies. */
Test(sandbox, proc_fields_are_read_from_a_real_status_file)
{
	struct ef_proc_field f[3];
	char pid[32], name[32], seccomp[8];
	ef_proc_field_init(&f[0], "Pid", pid, sizeof(pid));
	ef_proc_field_init(&f[1], "Name", name, sizeof(name));
	ef_proc_field_init(&f[2], "Seccomp", seccomp, sizeof(seccomp));
	cr_assert_eq(ef_proc_fields_via(syscall, 0, "status", f, 3), 0);
	cr_assert_eq(atol(pid), (long)getpid());
	cr_assert_str_eq(name, "unit-tests");
	cr_assert_eq(ef_seccomp_status_via(syscall), seccomp[0] != '0');
}

/* ---- The probe's answer, handed across exec ------------------------------- */

static const struct ef_probe_facts child = { .pid = 40, .ppid = 30, .filters = 1, .start = 5000,
					     .parent_start = 4000, .pidns = 4026532178ULL };

static int take(const char *text, const struct ef_probe_facts *f, unsigned *denied, int *why)
{
	return ef_probe_answer_take(text, f, 1000, denied, why);
}

Test(probe_answer, a_parents_answer_is_taken_by_its_child_and_by_itself_after_an_exec)
{
	struct ef_probe_facts parent = { .pid = 30, .ppid = 1, .filters = 1, .start = 4000,
					 .parent_start = 10, .pidns = 4026532178ULL };
	char text[128];
	unsigned denied = 99;
	int why = 99;

	cr_assert_eq(ef_probe_answer_fmt(text, sizeof(text), &parent, 1000, EF_DENY_SLACK, 0), 0);
	cr_assert_str_eq(text, "1:30:4000:4026532178:1:1000:2:0");
	cr_assert(take(text, &child, &denied, &why));
	cr_assert_eq(denied, EF_DENY_SLACK);
	cr_assert_eq(why, 0);
	cr_assert(take(text, &parent, &denied, &why), "the maker itself, after an exec");
	/* A refusal and a kill are answers too. */
	cr_assert_eq(ef_probe_answer_fmt(text, sizeof(text), &parent, 1000, EF_DENY_CALLS, -31), 0);
	cr_assert(take(text, &child, &denied, &why));
	cr_assert_eq(why, -31);
	cr_assert_eq(denied, EF_DENY_CALLS);
}

Test(probe_answer, only_answers_that_say_what_the_calls_do_are_handed_on)
{
	char text[128] = "x";
	struct ef_probe_facts none = child;

	cr_assert_eq(ef_probe_answer_fmt(text, sizeof(text), &child, 1000, EF_DENY_CALLS, EF_WHY_PROBE_SILENT), -1);
	cr_assert_str_eq(text, "");
	cr_assert_eq(ef_probe_answer_fmt(text, sizeof(text), &child, 1000, EF_DENY_CALLS, EF_WHY_PROBE_NO_CHILD), -1);
	none.filters = 0;
	cr_assert_eq(ef_probe_answer_fmt(text, sizeof(text), &none, 1000, 0, 0), -1);
	cr_assert_eq(ef_probe_answer_fmt(text, 8, &child, 1000, 0, 0), -1, "cut short");
	cr_assert_str_eq(text, "");
}

Test(probe_answer, an_answer_made_anywhere_else_is_not_taken)
{
	unsigned denied;
	int why;
	static const char *const no[] = {
		"1:31:4000:4026532178:1:1000:0:0",  /* another process's (not its parent's) */
		"1:30:4001:4026532178:1:1000:0:0",  /* its parent's pid, another start: a pid used again */
		"1:30:4000:4026531836:1:1000:0:0",  /* another PID namespace */
		"1:30:4000:4026532178:2:1000:0:0",  /* another filter count */
		"1:30:4000:4026532178:0:1000:0:0",
		"1:30:4000:4026532178:1:50000:0:0", /* another slack tried */
		"2:30:4000:4026532178:1:1000:0:0",  /* another version's */
		"1:30:4000:4026532178:1:1000:4:0",  /* bits that are no probe's */
		"1:30:4000:4026532178:1:1000:0:200",
		"1:30:4000:4026532178:1:1000:0:-65",
		"1:30:4000:4026532178:1:1000:0",    /* too few */
		"1:30:4000:4026532178:1:1000:0:0:", /* too many */
		"1:30:4000:4026532178:1:1000:0:0:0",
		"1:30:4000:4026532178:1:1000:0:0 ",
		" 1:30:4000:4026532178:1:1000:0:0",
		"1:-30:4000:4026532178:1:1000:0:0",
		"1:30:4000:4026532178:1:1000:-0:0",
		"1::4000:4026532178:1:1000:0:0",
		"1:30:99999999999999999999999:4026532178:1:1000:0:0",
		"",
		":",
		"1",
	};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		cr_assert_not(take(no[i], &child, &denied, &why), "taken: '%s'", no[i]);
	cr_assert_not(take(NULL, &child, &denied, &why));
	/* A child whose parent is outside its namespace (ppid 0) takes none. */
	struct ef_probe_facts orphan = child;
	orphan.ppid = 0;
	orphan.parent_start = 0;
	cr_assert_not(take("1:0:0:4026532178:1:1000:0:0", &orphan, &denied, &why));
	cr_assert(take("1:30:4000:4026532178:1:1000:0:0", &child, &denied, &why));
}

Test(probe_answer, the_facts_of_this_process_are_read_from_proc)
{
	struct ef_probe_facts f;

	cr_assert_eq(ef_probe_facts_via(syscall, &f), 0);
	cr_assert_eq(f.pid, (long)getpid());
	cr_assert_eq(f.ppid, (long)getppid());
	cr_assert_gt(f.start, 0);
	cr_assert_gt(f.pidns, 0);
	cr_assert_geq(f.filters, 0);
}
