"""A small asyncio service on loopback: an echo server and CLIENTS clients that
each send REQUESTS lines with short sleeps between them. Bounded; exits when
every reply came back. Prints "requests=.. elapsed_ms=..".

usage: asyncio_service.py [clients] [requests]"""
import asyncio
import sys
import time


async def handle(reader, writer):
    while line := await reader.readline():
        writer.write(line)
        await writer.drain()
    writer.close()


async def client(port, requests):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for i in range(requests):
        writer.write(b"ping %d\n" % i)
        await writer.drain()
        assert await reader.readline() == b"ping %d\n" % i
        await asyncio.sleep(100e-6)
    writer.close()
    await writer.wait_closed()


async def main(clients, requests):
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    start = time.perf_counter_ns()
    await asyncio.wait_for(asyncio.gather(*(client(port, requests) for _ in range(clients))), 60)
    print(f"requests={clients * requests} elapsed_ms={(time.perf_counter_ns() - start) // 1000000}")
    server.close()
    await server.wait_closed()


asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10,
                 int(sys.argv[2]) if len(sys.argv) > 2 else 200))
