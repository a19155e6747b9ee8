"""An asyncio echo server on loopback with a 200 us housekeeping task, the
shape of a real service. Prints its port on the first line, then serves until
killed or for SECONDS (a bound, so a failed test leaves nothing behind).

usage: asyncio_server.py [seconds]"""
import asyncio
import sys


async def handle(reader, writer):
    while line := await reader.readline():
        writer.write(line)
        await writer.drain()
    writer.close()


async def tick():
    while True:
        await asyncio.sleep(200e-6)


async def main(seconds):
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    ticker = asyncio.create_task(tick())
    await asyncio.sleep(seconds)
    ticker.cancel()
    server.close()


asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 60))
