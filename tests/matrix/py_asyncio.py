"""asyncio.sleep(SLEEP) COUNT times: each sleep is one fire, its lateness the
elapsed time minus SLEEP. asyncio waits ceil(remaining ms) and re-waits until
the deadline, so its 1 ms hides a sub-millisecond deadline.

usage: py_asyncio.py [sleep_seconds=50e-6] [count=300]"""
import asyncio
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from mxreport import report, write_fires  # noqa: E402


async def main(sleep_s, count):
    late, fires = [], []
    for _ in range(count):
        deadline = time.perf_counter_ns() + int(sleep_s * 1e9)
        await asyncio.sleep(sleep_s)
        fires.append(time.perf_counter_ns())
        late.append(fires[-1] - deadline)
    write_fires(fires)
    return late


if __name__ == "__main__":
    sleep_s = float(sys.argv[1]) if len(sys.argv) > 1 else 50e-6
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    started = time.perf_counter_ns()
    report(asyncio.run(main(sleep_s, count)), started)
