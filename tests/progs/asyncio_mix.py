"""An asyncio program that mixes sleeps and ready callbacks: tasks that yield
with sleep(0) many times in a row, short timers, and a producer/consumer queue.
Prints "elapsed_ms=.." for the whole run.

usage: asyncio_mix.py [rounds]"""
import asyncio
import sys
import time


async def yielder(n):
    for _ in range(n):
        await asyncio.sleep(0)


async def sleeper(n):
    for _ in range(n):
        await asyncio.sleep(200e-6)


async def producer(q, n):
    for i in range(n):
        await q.put(i)
        if i % 10 == 0:
            await asyncio.sleep(0)
    await q.put(None)


async def consumer(q):
    while await q.get() is not None:
        pass


async def main(rounds):
    start = time.perf_counter_ns()
    for _ in range(rounds):
        q = asyncio.Queue(maxsize=8)
        await asyncio.gather(yielder(300), yielder(300), sleeper(5),
                             producer(q, 300), consumer(q))
    print(f"elapsed_ms={(time.perf_counter_ns() - start) // 1000000}")


asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
