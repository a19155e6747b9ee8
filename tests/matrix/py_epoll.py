"""select.epoll().poll(SLEEP) on an idle pipe COUNT times: each poll is one
fire, its lateness the elapsed time minus SLEEP (CPython rounds it up to whole
ms). Also prints early=N: polls that returned more than 100 us before SLEEP.

usage: py_epoll.py [sleep_seconds=50e-6] [count=300]"""
import os
import select
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from mxreport import report  # noqa: E402

sleep_s = float(sys.argv[1]) if len(sys.argv) > 1 else 50e-6
count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
r, w = os.pipe()
ep = select.epoll()
ep.register(r, select.EPOLLIN)
late = []
started = time.perf_counter_ns()
for _ in range(count):
    deadline = time.perf_counter_ns() + int(sleep_s * 1e9)
    if ep.poll(sleep_s):
        sys.exit("events on an idle pipe")
    late.append(time.perf_counter_ns() - deadline)
report(late, started, early=True)
