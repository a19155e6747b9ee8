/* The agent's reader (doc/agent.md): a child process that does for the agent
 * everything that touches what a served process controls, its executable's
 * file, its memory and its file descriptors. A user's FUSE file that never
 * answers (an executable it cannot open, a FLUSH at the close of a file the
 * process passed off as its epoll set, a page of its memory mapped from such
 * a file) then blocks that child, and costs that one process its precision:
 * the loop that serves the node only sends requests and reads the answers as
 * they come, and never waits on any of them. A child that makes no progress
 * on a request for EF_READER_HUNG_MS (its reads count, not the wall clock: a
 * slow disk is progress) is left where it is blocked, named in the agent's
 * log, and replaced; the process it was reading is refused, and the
 * processes of its cgroup (a container, a service, a login session) are not
 * read for EF_READER_BACKOFF_S, so that no one can make the agent leave more
 * than one child a minute behind, and no other cgroup's programs pay for
 * it. */
#ifndef EPOLLFIX_AGENT_READER_H
#define EPOLLFIX_AGENT_READER_H

#include <stdint.h>

#include "agent_look.h"
#include "agentsel.h"

#define EF_READER_HUNG_MS 1000
/* A request that reads on for this long is a file that drips (a FUSE
 * server that answers each read just in time): refused like a hung one. A
 * real Go program's reading takes milliseconds; Debian's prometheus, its
 * 1678 reads each made 1 ms late, about 2 s. */
#define EF_READER_SLOW_S 20
#define EF_READER_BACKOFF_S 60

struct ef_reader;

/* The reader and its children (two: a slow reading delays no other look);
 * their sockets are added to the epoll set ep (data.fd: ef_reader_is tells
 * them, and they change when a child is replaced). sel and only are the
 * agent's choice (only: attach's one process, or 0). NULL with errno. */
struct ef_reader *ef_reader_new(int ep, const struct ef_sel *sel, long only);
/* The children killed; one left blocked stays until what blocks it answers. */
void ef_reader_free(struct ef_reader *r);
int ef_reader_is(const struct ef_reader *r, int fd);

/* Sends q (with a copy of the file ring, for WAKE): 0, or -1 when too many
 * are under way (asked again later: a scan, the waker's mending). */
int ef_reader_ask(struct ef_reader *r, const struct ef_rq *q, int ring);
/* Requests under way. */
size_t ef_reader_pending(const struct ef_reader *r);

/* The answers that came on fd (readable, ef_reader_is), each given to fn with
 * its request. */
typedef void ef_reader_fn(const struct ef_rq *q, const struct ef_ra *a, void *arg);
void ef_reader_answers(struct ef_reader *r, int fd, ef_reader_fn *fn, void *arg);
/* Every quarter of a second while requests are under way: a child that made
 * no progress for EF_READER_HUNG_MS is left, said in one line, and replaced;
 * its request is answered -2 through fn, the others it had asked again of
 * the new child. Children left earlier that have ended are reaped (and
 * said). */
void ef_reader_watch(struct ef_reader *r, ef_reader_fn *fn, void *arg);
/* Whether tgid's cgroup is (or is below) one a process that hung a child
 * was in, within EF_READER_BACKOFF_S: its processes are not read meanwhile.
 * Reads nothing while no cgroup is backed off. */
int ef_reader_backed_off(const struct ef_reader *r, uint32_t tgid);

#endif
