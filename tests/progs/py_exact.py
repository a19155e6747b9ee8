"""select.epoll as programs use it, to check that the exact-timeout
integration (epollfix._epollfix) changes nothing but the waits' precision.

usage: py_exact.py CHECK [args]
  state                 active=0|1 (is select.epoll.poll the integration's?)
  enable LIB            epollfix.enable(LIB), then state
  errors                each error case of poll(): its exception and message
  eintr                 poll(0.2) interrupted by SIGALRM at 50 ms (a handler
                        that returns): elapsed_ms= (CPython retries with the
                        time left, so about 200)
  fork                  poll(0.0003) 50 times in a forked child: child_ok=1
  threads               two threads, each 100 poll(0.0003): per_poll_wakeups=
Every line is key=value."""
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
        t = time.perf_counter()
        for _ in range(50):
            ep.poll(0.0003)
        os._exit(0 if time.perf_counter() - t < 0.04 else 1)
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


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "enable":
        import epollfix
        epollfix.enable(sys.argv[2])
        what = "state"
    {"state": state, "errors": errors, "eintr": eintr, "fork": fork, "threads": threads}[what]()
