"""asyncio.sleep(SLEEP) COUNT times on the default (epoll) event loop.

usage: asyncio_timer.py SLEEP_US COUNT [RAW_FILE]
Prints the summary line the C benchmark programs print (waits=0: not seen);
RAW_FILE gets the elapsed time of each sleep in ns, one a line."""
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
    sleep_us, count = int(sys.argv[1]), int(sys.argv[2])
    raw = sys.argv[3] if len(sys.argv) > 3 else None
    wall0, cpu0 = time.perf_counter_ns(), time.process_time_ns()
    csw0 = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    samples = asyncio.run(main(sleep_us * 1e-6, count))
    wall, cpu = time.perf_counter_ns() - wall0, time.process_time_ns() - cpu0
    csw = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - csw0
    print(f"count={len(samples)} waits=0 cpu_ns={cpu} wall_ns={wall} nvcsw={csw}")
    if raw:
        with open(raw, "w") as f:
            f.write("".join(f"{s}\n" for s in samples))


if __name__ == "__main__":
    run()
