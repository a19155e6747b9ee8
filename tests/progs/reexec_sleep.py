"""asyncio_sleep.py's demo behind epollfix.reexec(), as a program whose entry
point nobody wraps would do it (run with a Python that has the wheel installed).

usage: reexec_sleep.py [sleep_seconds] [count]
Prints "start pid=.. loaded=.." first thing at each start, so the caller can
count the execs: two when reexec() re-executes, one when the library was already
loaded; then "reexec=True|False" and asyncio_sleep.py's lines.
REEXEC_SLEEP_NO_ORIG_ARGV=1 hides sys.orig_argv, as on Python before 3.10."""
import os
import sys

import epollfix

print(f"start pid={os.getpid()} loaded={epollfix.loaded()}", flush=True)
if os.environ.get("REEXEC_SLEEP_NO_ORIG_ARGV") == "1":
    del sys.orig_argv
result = epollfix.reexec()
# A second call (another module of the program calling it too) changes nothing.
assert epollfix.reexec() is result
print(f"reexec={result}", flush=True)

import asyncio_sleep  # noqa: E402  (beside this file: sys.path[0])

asyncio_sleep.run()
