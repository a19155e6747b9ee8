/* Counters of what the library did, and the report a user reads at exit.
 * Each thread owns a slot (slots.h, which counts each call); the report sums
 * the slots. */
#ifndef EPOLLFIX_STATS_H
#define EPOLLFIX_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fmt.h"
#include "live.h"
#include "policy.h"
#include "slots.h"
#include "totals.h"

extern struct ef_site_row ef_site_rows[EF_SITE_ROWS];
/* A slot for a new thread, which keeps it in its thread-local state: a fresh
 * one, or one a thread that ended gave back. */
struct ef_slot *ef_stats_claim(void);
/* A thread ends (or a fork child drops another thread's): its slot goes back,
 * counts and all, for the next thread to add to. */
void ef_stats_release(struct ef_slot *s);

/* ---- Call sites (slow path only) ----------------------------------------------
 * What the policy did where: one row per return address that made a rounded-up
 * request, shared by all threads, holding what it is (its flags, which change
 * rarely); what was done there is counted in each thread's slot (EF_K_SITES). */
/* After a rounded-up request from ra, counted in slot s: what was done, what
 * the policy knows of the site now (NULL: nothing), and how its caller was
 * classed (EF_SF_RECOGNISED, EF_SF_LISTED_*, or 0). *memo is the thread's
 * row of the site it counted last (NULL at first): rows are never given up,
 * so a run of waits from one site does not scan them again. */
void ef_stats_site(struct ef_slot *s, struct ef_site_row **memo, const void *ra,
		   const struct ef_site *site, struct ef_decision done, unsigned caller_flags);

/* A run of requests from ra ended (ef_decision.ended). */
void ef_stats_site_ended(struct ef_slot *s, struct ef_site_row **memo, const void *ra);

/* Records a verdict of the learner (enum ef_learned, nonzero). */
void ef_stats_learned(struct ef_slot *s, int learned);

/* This process's figures: its own slots summed (totals.h). */
void ef_stats_sum(struct ef_totals *t);
/* Writes the report where EPOLLFIX_STATS says, if it asks for one (at exit). */
void ef_stats_report(void);
/* In the constructor: what the report needs that a filter the program
 * installs later may forbid it to fetch at exit (the program's name). */
void ef_stats_prepare(void);
/* In a fork child: counts start again, so each process reports its own calls,
 * and every slot but keep (the surviving thread's, or NULL) is free. */
void ef_stats_after_fork(struct ef_slot *keep);
/* The slots (ef_stats_slots), made on first use. */
struct ef_slot *ef_stats_all(void);
/* 1 once, in a child made with its own copy of memory that no fork handler
 * reached (its slots were zeroed by the kernel): for the rest of what a fork
 * handler would do, where the library is next entered off the fast path. */
int ef_stats_new_process(void);

#endif
