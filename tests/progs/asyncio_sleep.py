"""asyncio.sleep(SLEEP) COUNT times on the default (epoll) event loop, for the
bats suite and for bench/run alike.

usage: asyncio_sleep.py [sleep_seconds] [count] [raw_file]
Prints the benchmark's summary line "count=.. waits=0 cpu_ns=.. wall_ns=..
nvcsw=.." (waits=0: not seen), then "median_us=.. min_us=.. max_us=..";
raw_file gets the elapsed time of each sleep in ns, one a line."""
import asyncio
import resource
import sys
import time


async def main(sleep_s, count):
    samples = []
    for _ in range(count):
        start = time.perf_counter_ns()
        await asyncio.sleep(sleep_s)
        samples.append(time.perf_counter_ns() - start)
    return samples


def run():
    sleep_s = float(sys.argv[1]) if len(sys.argv) > 1 else 50e-6
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    raw = sys.argv[3] if len(sys.argv) > 3 else None
    wall0, cpu0 = time.perf_counter_ns(), time.process_time_ns()
    csw0 = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    samples = asyncio.run(main(sleep_s, count))
    wall, cpu = time.perf_counter_ns() - wall0, time.process_time_ns() - cpu0
    csw = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - csw0
    print(f"count={len(samples)} waits=0 cpu_ns={cpu} wall_ns={wall} nvcsw={csw}")
    if raw:
        with open(raw, "w") as f:
            f.write("".join(f"{s}\n" for s in samples))
    samples.sort()
    print(f"median_us={samples[count // 2] // 1000} min_us={samples[0] // 1000} "
          f"max_us={samples[-1] // 1000}")


if __name__ == "__main__":
    run()
