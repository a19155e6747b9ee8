"""asyncio.sleep(SLEEP) COUNT times; prints the elapsed time of each sleep.

usage: asyncio_sleep.py [sleep_seconds] [count]
Output: "median_us=.. min_us=.. max_us=.."."""
import asyncio
import sys
import time


async def main(sleep_s, count):
    samples = []
    for _ in range(count):
        start = time.perf_counter_ns()
        await asyncio.sleep(sleep_s)
        samples.append(time.perf_counter_ns() - start)
    samples.sort()
    print(f"median_us={samples[count // 2] // 1000} min_us={samples[0] // 1000} "
          f"max_us={samples[-1] // 1000}")


if __name__ == "__main__":
    sleep_s = float(sys.argv[1]) if len(sys.argv) > 1 else 50e-6
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    asyncio.run(main(sleep_s, count))
