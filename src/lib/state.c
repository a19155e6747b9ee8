#define _GNU_SOURCE
#include "state.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "recognize.h"
#include "sysconf.h"
#include "wait_path.h"

#define NWORDS (sizeof(struct ef_config) / sizeof(int64_t))
_Static_assert(sizeof(struct ef_config) % sizeof(int64_t) == 0, "config is int64 words");

/* A seqlock: readers copy the words and retry if a writer moved seq meanwhile. */
static _Atomic uint64_t seq;
static _Atomic int64_t words[NWORDS];
static atomic_flag writer = ATOMIC_FLAG_INIT;
enum { UNREAD, READING, READY };
static _Atomic int loaded = UNREAD;
_Atomic int ef_fast_pos = EF_FAST_ALL;
_Atomic int ef_fast_neg;
_Atomic int ef_fast_zero_hold = EF_FAST_ZERO_HOLD;
_Atomic int ef_fast_off;

/* A writer preempted mid-update must not make readers spin: after this many
 * tries the call passes through. */
#define READ_TRIES 64

/* The fast words of a configuration (state.h). */
static void publish_fast(const struct ef_config *c)
{
	int all = c->disable || c->log >= EF_LOG_DEBUG;

	atomic_store_explicit(&ef_fast_off, c->disable, memory_order_relaxed);
	atomic_store_explicit(&ef_fast_pos, all ? EF_FAST_ALL : (int)c->max_ms, memory_order_relaxed);
	atomic_store_explicit(&ef_fast_neg, all ? 0 : EF_FAST_NEG_PASS, memory_order_relaxed);
	atomic_store_explicit(&ef_fast_zero_hold, all || c->clamp_ns > 0 ? EF_FAST_ZERO_HOLD : 0,
			      memory_order_release);
}

/* The configuration being published, whole, before any word changes: a fork
 * child whose parent had a writer mid-update takes it (ef_state_after_fork). */
static struct ef_config publishing;

static void publish(const struct ef_config *c)
{
	int64_t w[NWORDS];
	uint64_t s = atomic_load_explicit(&seq, memory_order_relaxed);

	memcpy(w, c, sizeof(w));
	publishing = *c;
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	for (size_t i = 0; i < NWORDS; i++)
		atomic_store_explicit(&words[i], w[i], memory_order_relaxed);
	atomic_store_explicit(&seq, s + 2, memory_order_release);
	publish_fast(c);
	ef_log_set_level((enum ef_log)c->log);
}

/* Copies the words into *c; *at: the seq they were published under. */
static int snapshot(struct ef_config *c, uint64_t *at)
{
	int64_t w[NWORDS];

	for (int tries = 0; tries < READ_TRIES; tries++) {
		uint64_t s1 = atomic_load_explicit(&seq, memory_order_acquire);
		for (size_t i = 0; i < NWORDS; i++)
			w[i] = atomic_load_explicit(&words[i], memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		uint64_t s2 = atomic_load_explicit(&seq, memory_order_relaxed);
		if (s1 == s2 && !(s1 & 1)) {
			memcpy(c, w, sizeof(w));
			*at = s1;
			return 1;
		}
	}
	return 0;
}

/* Secure execution (setuid, setgid or file capabilities: the kernel sets
 * AT_SECURE) means the caller is not the program's owner, so the caller's
 * environment gives no orders: no variable is read at all, as glibc ignores LD_*
 * there, and the configuration is the system file's or the defaults. */
static int secure_execution(void)
{
	return getauxval(AT_SECURE) != 0;
}

int ef_state_secure(void)
{
	return secure_execution();
}

/* The one place the library reads its variables. */
const char *ef_state_env(const char *name)
{
	return secure_execution() ? NULL : getenv(name);
}

static _Atomic int selected = 1;

int ef_state_selected(void)
{
	return atomic_load_explicit(&selected, memory_order_relaxed);
}

/* EPOLLFIX_ONLY and EPOLLFIX_SKIP: a program left alone behaves as with
 * EPOLLFIX_DISABLE=1, uncounted and unreported. */
static void select_program(struct ef_config *c, const struct ef_text *t)
{
	const char *only = t->only, *skip = t->skip;
	char comm[64], argv0[4096], text[1024];
	struct ef_buf msg = EF_BUF(text);

	if (!*only && !*skip)
		return;
	ef_proc_line("comm", comm, sizeof(comm));
	ef_proc_line("cmdline", argv0, sizeof(argv0));
	atomic_store_explicit(&selected, ef_program_selected(only, skip, comm, argv0, &msg),
			      memory_order_relaxed);
	if (msg.len)
		ef_log(EF_LOG_WARN, "%s", text);
	if (!ef_state_selected())
		c->disable = 1;
}

/* The text settings, written once by load_once before it publishes READY. */
static struct ef_text text;

const struct ef_text *ef_state_text(void)
{
	return atomic_load_explicit(&loaded, memory_order_acquire) == READY ? &text : NULL;
}

static int load_once(void)
{
	int expected = UNREAD;

	if (atomic_compare_exchange_strong(&loaded, &expected, READING)) {
		/* The reading opens files, cancellation points: a thread cancelled
		 * there would leave it READING for ever, and the library inert. */
		int cancel;
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
		struct ef_config c;
		static struct ef_origin origin; /* only the command shows it */
		const char *file;
		ef_config_load(&c, &text, &origin, &file, ef_state_env);
		/* Secure execution writes no report, not even one the system file
		 * asks for: its path would be a root-owned file that the program's
		 * caller could then make the program append to. */
		if (secure_execution())
			text.stats[0] = '\0';
		select_program(&c, &text);
		ef_recognize_lists(text.genuine_callers, text.subms_callers);
		while (atomic_flag_test_and_set_explicit(&writer, memory_order_acquire))
			sched_yield();
		publish(&c);
		atomic_flag_clear_explicit(&writer, memory_order_release);
		atomic_store_explicit(&loaded, READY, memory_order_release);
		pthread_setcancelstate(cancel, NULL);
		return 1;
	}
	return expected == READY;
}

int ef_state_config(struct ef_config *c)
{
	uint64_t at;

	if (__builtin_expect(atomic_load_explicit(&loaded, memory_order_acquire) != READY, 0) &&
	    !load_once())
		return 0;
	return snapshot(c, &at);
}

EF_WAIT_PATH const struct ef_config *ef_state_config_copy(struct ef_config_copy *copy)
{
	if (__builtin_expect(atomic_load_explicit(&loaded, memory_order_acquire) != READY, 0) &&
	    !load_once())
		return NULL;
	/* Published words are never written again under the same seq, and the
	 * first publication's seq is 2: a copy with seq 0 was never taken. */
	uint64_t s = atomic_load_explicit(&seq, memory_order_acquire);
	if (__builtin_expect(s == copy->seq, 1))
		return &copy->c;
	/* A writer preempted mid-update (its seq odd through all our tries)
	 * leaves the thread the copy it had: the configuration in force until
	 * that writer finishes. Without it the call would pass unseen by the
	 * policy and uncounted, as a thread's first call still does. */
	return snapshot(&copy->c, &copy->seq) || copy->seq ? &copy->c : NULL;
}

int ef_state_set(const char *word, struct ef_buf *msg)
{
	char key[64];
	const char *eq = word ? strchr(word, '=') : NULL;
	struct ef_config c;

	if (!eq || (size_t)(eq - word) >= sizeof(key)) {
		ef_fmt(msg, "'%s' is not key=value", word ? word : "");
		return -1;
	}
	memcpy(key, word, (size_t)(eq - word));
	key[eq - word] = '\0';
	const struct ef_var *v = ef_var_find(key);
	if (!v) {
		ef_fmt(msg, "'%s' is not a setting of epollfix", key);
		return -1;
	}
	if (atomic_load_explicit(&loaded, memory_order_acquire) != READY && !load_once()) {
		ef_fmt(msg, "the configuration is still being read");
		return -1;
	}
	while (atomic_flag_test_and_set_explicit(&writer, memory_order_acquire))
		sched_yield();
	/* Under the lock no writer is mid-update, so the snapshot succeeds. */
	uint64_t at;
	int r = snapshot(&c, &at) ? ef_config_set(&c, v, eq + 1, msg) : -1;
	if (r == 0)
		publish(&c);
	atomic_flag_clear_explicit(&writer, memory_order_release);
	return r;
}

void ef_state_load(void)
{
	load_once();
}

/* In a fork child: only the calling thread survives, so a read of the
 * environment, a writer's lock or an odd seq left by another thread is undone. */
void ef_state_after_fork(void)
{
	int reading = READING;
	/* The environment is read again if another thread was reading it. */
	atomic_compare_exchange_strong(&loaded, &reading, UNREAD);
	atomic_flag_clear(&writer);
	/* A writer mid-update leaves words of two configurations: the child
	 * takes the whole one it was writing, and the fast words that go with
	 * the words in force (they are written after them). */
	uint64_t s = atomic_load(&seq);
	if (s & 1) {
		int64_t w[NWORDS];
		memcpy(w, &publishing, sizeof(w));
		for (size_t i = 0; i < NWORDS; i++)
			atomic_store_explicit(&words[i], w[i], memory_order_relaxed);
		atomic_store(&seq, s + 1);
	}
	struct ef_config c;
	uint64_t at;
	if (atomic_load(&loaded) == READY && snapshot(&c, &at))
		publish_fast(&c);
}

/* Where `epollfix status` finds the published configuration (block.c). */
void ef_state_live(uint64_t *seq_addr, uint64_t *words_addr, uint32_t *nwords,
		   uint64_t *selected_addr)
{
	*seq_addr = (uint64_t)(uintptr_t)&seq;
	*words_addr = (uint64_t)(uintptr_t)words;
	*nwords = NWORDS;
	*selected_addr = (uint64_t)(uintptr_t)&selected;
}
