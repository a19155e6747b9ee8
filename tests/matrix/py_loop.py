"""Timers on one Python event loop, for the wake-up economy of tests/matrix.

usage: py_loop.py LOOP sleep SECONDS COUNT
       py_loop.py LOOP mix FAST_SECONDS SLOW_SECONDS COUNT

LOOP is asyncio (CPython's EpollSelector), trio, tornado (its IOLoop, on
asyncio), gevent (its default libev loop; GEVENT_LOOP=libuv selects its libuv
loop, read by gevent.config at import) or uvloop (libuv). The third-party loops
come from build/venv (tests/matrix/requirements.txt).

sleep: back-to-back sleeps of SECONDS, COUNT of them; each is a fire, its
lateness the time it returned minus the deadline it was asked for.
mix: two periodic timers in one loop, FAST and SLOW seconds, each re-armed from
its own callback (deadline = fire time + period), until SLOW has fired COUNT
times; fast_* and slow_* fields give each timer's fires and lateness.

The report line adds, for the timer phase only (getrusage(RUSAGE_SELF) in the
running loop before the first timer and after the last, so interpreter
start-up, imports and the loop's creation are left out): vcsw= voluntary context switches (the process's wake-ups) and
cpu_us= user+system CPU."""
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mxreport import report  # noqa: E402

now = time.perf_counter_ns
usage = []  # getrusage(RUSAGE_SELF) at the start and the end of the timers


def mark():
    usage.append(resource.getrusage(resource.RUSAGE_SELF))


def sleeper(loop):
    """(an async function sleeping for s seconds, a runner of a coroutine)."""
    if loop == "trio":
        import trio
        return trio.sleep, trio.run
    if loop == "gevent":
        import gevent
        return gevent.sleep, lambda f, *a: f(*a)
    import asyncio
    if loop == "uvloop":
        import uvloop
        return asyncio.sleep, lambda f, *a: uvloop.run(f(*a))
    if loop == "tornado":
        import tornado.gen
        import tornado.ioloop

        def run(f, *a):
            return tornado.ioloop.IOLoop.current().run_sync(lambda: f(*a))
        return tornado.gen.sleep, run
    if loop == "asyncio":
        return asyncio.sleep, lambda f, *a: asyncio.run(f(*a))
    sys.exit(f"py_loop.py: unknown loop {loop!r}")


def is_coroutine_loop(loop):
    return loop != "gevent"


def sleeps(loop, sleep_s, count):
    sleep, run = sleeper(loop)
    late = []

    def body_sync():
        mark()
        for _ in range(count):
            deadline = now() + int(sleep_s * 1e9)
            sleep(sleep_s)
            late.append(now() - deadline)
        mark()

    async def body():
        mark()
        for _ in range(count):
            deadline = now() + int(sleep_s * 1e9)
            await sleep(sleep_s)
            late.append(now() - deadline)
        mark()

    if is_coroutine_loop(loop):
        run(body)
    else:
        run(body_sync)
    return late, {}


def mix(loop, fast_s, slow_s, count):
    """Two periodic timers: each task sleeps its period again as soon as it
    wakes, so its next deadline is its fire time plus its period."""
    sleep, run = sleeper(loop)
    late = {"fast": [], "slow": []}
    done = [False]

    def one(name, period_s, stop_after):
        async def task():
            while not done[0]:
                deadline = now() + int(period_s * 1e9)
                await sleep(period_s)
                late[name].append(now() - deadline)
                if stop_after and len(late[name]) >= stop_after:
                    done[0] = True
        return task

    async def both_asyncio():
        import asyncio
        mark()
        await asyncio.gather(one("fast", fast_s, 0)(), one("slow", slow_s, count)())
        mark()

    async def both_trio():
        import trio
        mark()
        async with trio.open_nursery() as n:
            n.start_soon(one("fast", fast_s, 0))
            n.start_soon(one("slow", slow_s, count))
        mark()

    def both_gevent():
        import gevent
        mark()

        def g(name, period_s, stop_after):
            while not done[0]:
                deadline = now() + int(period_s * 1e9)
                sleep(period_s)
                late[name].append(now() - deadline)
                if stop_after and len(late[name]) >= stop_after:
                    done[0] = True
        gevent.joinall([gevent.spawn(g, "fast", fast_s, 0), gevent.spawn(g, "slow", slow_s, count)])
        mark()

    if loop == "trio":
        run(both_trio)
    elif loop == "gevent":
        run(both_gevent)
    elif loop == "tornado":
        import tornado.gen

        async def both_tornado():
            mark()
            await tornado.gen.multi([one("fast", fast_s, 0)(), one("slow", slow_s, count)()])
            mark()
        run(both_tornado)
    else:
        run(both_asyncio)
    return late["slow"], late


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, len(v) * q // 100)] // 1000 if v else 0


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    loop, mode = sys.argv[1], sys.argv[2]
    started = now()
    if mode == "sleep":
        late, parts = sleeps(loop, float(sys.argv[3]), int(sys.argv[4]))
    elif mode == "mix":
        late, parts = mix(loop, float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(__doc__)
    r0, r1 = usage[0], usage[-1]
    cpu_us = int((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1e6)
    extra = f" vcsw={r1.ru_nvcsw - r0.ru_nvcsw} cpu_us={cpu_us}"
    for name, values in parts.items():
        extra += (f" {name}_fires={len(values)} {name}_p50_us={pct(values, 50)}"
                  f" {name}_p90_us={pct(values, 90)}")
    report(late, started, extra=extra)


if __name__ == "__main__":
    main()
