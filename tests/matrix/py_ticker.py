"""A plain Python loop that means its 1 ms: select.epoll().poll(0.001) on an
idle epoll set, again and again, with a little work after each return, for MS
milliseconds. Like tests/matrix/ticker.c, its stream of 1 ms requests never
ends and never finds an event.

usage: py_ticker.py [ms=1000]

Prints "ticks=N elapsed_ms=.. vcsw=.. cpu_us=.. after_ms=.. after_vcsw=..
after_cpu_us=..": the whole loop, then from 100 ms on (getrusage(RUSAGE_SELF)
in the process itself)."""
import resource
import select
import sys
import time


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_nvcsw, int((r.ru_utime + r.ru_stime) * 1e6)


def main():
    ms = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    ep = select.epoll()
    state = {}
    now = time.perf_counter_ns
    start = now()
    end, mark_at = start + ms * 1000000, start + 100000000
    csw0, cpu0 = usage()
    mark = None
    ticks = 0
    t = start
    while t < end:
        if mark is None and t >= mark_at:
            mark = (t, *usage())
        ep.poll(0.001)
        ticks += 1
        # a little work per tick: look at some state
        state[ticks % 8] = sum(range(16))
        t = now()
    csw, cpu = usage()
    print(f"ticks={ticks} elapsed_ms={(t - start) // 1000000} vcsw={csw - csw0} "
          f"cpu_us={cpu - cpu0} after_ms={(t - mark[0]) // 1000000} "
          f"after_vcsw={csw - mark[1]} after_cpu_us={cpu - mark[2]}", flush=True)


if __name__ == "__main__":
    main()
