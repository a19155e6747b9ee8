/* The functions an upgraded wait runs, side by side in the text.
 *
 * A wait of a run comes back from sleeping to find the library's code cold in
 * the caches. Spread over five pages (the slow path's entries among the fast
 * path's cold tails, then the policy, the counters and the caller lookup), the
 * path cost about 0.01x of a 6 us wake-up more than when gathered in two. The
 * rare parts it calls (a new caller's classification, the debug line) stay
 * out of line, so the path's lines are dense.
 *
 * GNU ld and gold gather .text.hot.* ahead of the rest of .text; lld keeps each
 * object's together. A layout hint: no behaviour depends on it. */
#ifndef EPOLLFIX_WAIT_PATH_H
#define EPOLLFIX_WAIT_PATH_H

#define EF_WAIT_PATH __attribute__((section(".text.hot.epollfix")))

#endif
