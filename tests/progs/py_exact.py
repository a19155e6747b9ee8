"""select.epoll as programs use it, to check that the exact-timeout
integration (epollfix._epollfix) changes nothing but the waits' precision.

usage: py_exact.py CHECK [args]
  state                 active=0|1 (is select.epoll.poll the integration's?)
  enable LIB            epollfix.enable(LIB), then state
  errors                each error case of poll(): its exception and message
  eintr                 poll(0.2) interrupted by SIGALRM at 50 ms (a handler
                        that returns): elapsed_ms= (CPython retries with the
                        time left, so about 200)
  fork                  poll(0.0003) 50 times in a forked child, each hinted: child_ok=1
  threads               two threads, each 100 poll(0.0003): per_poll_wakeups=
  bad_timeouts [LIB]    each timeout CPython refuses (NaN, inf, too large,
                        Decimal, Fraction, and on a closed epoll), poll()ed in
                        a subprocess of its own with the integration (LIB:
                        through epollfix.enable(LIB); else as started) and in
                        one without: NAME=same, or NAME=differs with both
                        (hung: no answer in 10 s)
  gives_up              poll(0.0255) interrupted by SIGALRM whose handler
                        outlives the deadline (CPython returns [] without
                        retrying), then a C-level epoll_wait(ep, .., 1):
                        after_hinted= (hinted waits the library counted for it)
  subinterp [LIB]       a subinterpreter calls epollfix.enable([LIB]) first,
                        then the main one does; each polls 50 times with
                        0.0002: NAME_enable=, main_active=, NAME_hinted= (the
                        library's count of hinted waits over those polls)
Every line is key=value."""
import ctypes
import os
import resource
import select
import signal
import sys
import threading
import time


def state():
    from epollfix import _epollfix
    print(f"active={int(_epollfix.active())}")


def errors():
    ep = select.epoll()
    cases = [
        ("maxevents0", lambda: ep.poll(0.001, 0)),
        ("maxevents_str", lambda: ep.poll(0.001, "x")),
        ("timeout_str", lambda: ep.poll("x")),
        ("too_many", lambda: ep.poll(0.001, 1, 2)),
        ("bad_keyword", lambda: ep.poll(0.001, nope=1)),
    ]
    ep2 = select.epoll()
    ep2.close()
    cases.append(("closed", lambda: ep2.poll(0.001)))
    for name, call in cases:
        try:
            call()
            print(f"{name}=no exception")
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            print(f"{name}={type(e).__name__}: {e}")
    print(f"none={ep.poll(None, 1) if False else ep.poll(0)}")
    print(f"keywords={ep.poll(timeout=0.0005, maxevents=4)}")


def eintr():
    signal.signal(signal.SIGALRM, lambda *a: None)
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    ep = select.epoll()
    t = time.perf_counter()
    r = ep.poll(0.2)
    print(f"elapsed_ms={int((time.perf_counter() - t) * 1000)} result={r}")


def fork():
    pid = os.fork()
    if pid == 0:
        ep = select.epoll()
        for _ in range(50):
            ep.poll(0.0003)
        # What the library says it did in the child, whose counts start
        # again at fork: every poll's exact timeout taken (how long the polls
        # took is the machine's load as much as the library's).
        os._exit(0 if counters(None) >= 50 else 1)
    _, status = os.waitpid(pid, 0)
    print(f"child_ok={int(status == 0)}")


def threads():
    ep = select.epoll()

    def loop():
        for _ in range(100):
            ep.poll(0.0003)
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    ts = [threading.Thread(target=loop) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    r1 = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    print(f"per_poll_wakeups={(r1 - r0) / 200:.2f}")


BAD_TIMEOUTS = ["nan", "inf", "-inf", "3e6", "10**12", "2**70", "-1e300",
                "Decimal('0.001')", "Fraction(1, 1000)", "'x'",
                "closed:0.001", "closed:'x'", "closed:nan", "closed:Decimal('1')",
                "closed-maxevents:'x'"]


def bad_case(expr, lib):
    """One poll() with a timeout CPython refuses; prints TYPE: MESSAGE."""
    from decimal import Decimal  # noqa: F401 - used by eval
    from fractions import Fraction  # noqa: F401
    if lib == "plain":
        pass
    elif lib != "as-started":
        import epollfix
        epollfix.enable(lib)
    from epollfix import _epollfix
    if _epollfix.active() != (lib != "plain"):
        print(f"active={_epollfix.active()}")
        return
    ep = select.epoll()
    kind, _, arg = expr.rpartition(":")
    if kind:
        ep.close()
    nan = float("nan")  # noqa: F841
    inf = float("inf")  # noqa: F841
    value = eval(arg)  # noqa: S307 - the test's own constants
    try:
        r = ep.poll(0.001, value) if kind == "closed-maxevents" else ep.poll(value)
        print(f"returned {r}")
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        print(f"{type(e).__name__}: {e}")


def bad_timeouts(lib):
    import subprocess
    for expr in BAD_TIMEOUTS:
        got = []
        for mode in ("plain", lib or "as-started"):
            env = dict(os.environ)
            if mode == "plain":
                env["EPOLLFIX_PYTHON"] = "off"
            try:
                p = subprocess.run([sys.executable, __file__, "bad_case", expr, mode], env=env,
                                   capture_output=True, text=True, timeout=10)
                got.append((p.stdout + p.stderr).strip())
            except subprocess.TimeoutExpired:
                got.append("hung")
        if got[0] == got[1]:
            print(f"{expr}=same ({got[0]})")
        else:
            print(f"{expr}=differs plain={got[0]!r} integration={got[1]!r}")


def counters(lib):
    """The library's hinted count (struct epollfix_counters' 18th member)."""
    so = ctypes.CDLL(lib) if lib else ctypes.CDLL(None)
    out = (ctypes.c_uint64 * 20)()
    if so.epollfix_counters(out, ctypes.c_size_t(ctypes.sizeof(out))) != 0:
        raise OSError("epollfix_counters")
    return out[17]


def gives_up():
    libc = ctypes.CDLL(None, use_errno=True)
    signal.signal(signal.SIGALRM, lambda *a: time.sleep(0.04))  # past the deadline
    ep = select.epoll()
    ep.poll(0)
    signal.setitimer(signal.ITIMER_REAL, 0.005)
    r = ep.poll(0.0255)
    buf = ctypes.create_string_buffer(64)
    before = counters(None)
    n = libc.epoll_wait(ep.fileno(), buf, 1, 1)
    print(f"poll={r} epoll_wait={n}")
    print(f"after_hinted={counters(None) - before}")


def subinterp(lib):
    try:
        import _interpreters as interps  # 3.13+
    except ImportError:
        import _xxsubinterpreters as interps
    sub = interps.create()
    arg = repr(lib) if lib else ""
    polls = "ep = select.epoll()\nfor _ in range(50):\n    ep.poll(0.0002)\n"
    before = counters(lib)
    interps.run_string(sub, "import os, select, epollfix\n"
                       f"on = epollfix.enable({arg})\n" + polls +
                       "os.write(1, f'sub_enable={on}\\n'.encode())\n")
    print(f"sub_hinted={counters(lib) - before}", flush=True)
    import epollfix
    from epollfix import _epollfix
    print(f"main_enable={epollfix.enable(*([lib] if lib else []))}")
    print(f"main_active={_epollfix.active()}")
    before = counters(lib)
    exec(polls)
    print(f"main_hinted={counters(lib) - before}", flush=True)
    before = counters(lib)
    interps.run_string(sub, "import select\n" + polls)
    print(f"sub_again_hinted={counters(lib) - before}")
    interps.destroy(sub)


if __name__ == "__main__":
    if sys.argv[1] == "bad_case":
        bad_case(sys.argv[2], sys.argv[3])
        sys.exit(0)
    if sys.argv[1] in ("bad_timeouts", "subinterp"):
        {"bad_timeouts": bad_timeouts, "subinterp": subinterp}[sys.argv[1]](
            sys.argv[2] if len(sys.argv) > 2 else None)
        sys.exit(0)
    if sys.argv[1] == "gives_up":
        gives_up()
        sys.exit(0)
    what = sys.argv[1]
    if what == "enable":
        import epollfix
        epollfix.enable(sys.argv[2])
        what = "state"
    {"state": state, "errors": errors, "eintr": eintr, "fork": fork, "threads": threads}[what]()
