"""select.epoll().poll(SLEEP) on an idle pipe COUNT times; prints elapsed times.

usage: epoll_poll.py [sleep_seconds] [count]
Output: "median_us=.. min_us=.. max_us=..". Exits 1 if a poll returns events."""
import os
import select
import sys
import time

sleep_s = float(sys.argv[1]) if len(sys.argv) > 1 else 50e-6
count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
r, w = os.pipe()
ep = select.epoll()
ep.register(r, select.EPOLLIN)
samples = []
for _ in range(count):
    start = time.perf_counter_ns()
    if ep.poll(sleep_s):
        sys.exit(1)
    samples.append(time.perf_counter_ns() - start)
samples.sort()
print(f"median_us={samples[count // 2] // 1000} min_us={samples[0] // 1000} "
      f"max_us={samples[-1] // 1000}")
