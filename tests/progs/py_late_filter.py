"""epollfix.enable() (the library loaded with dlopen, not preloaded), asyncio
sleeps, then a seccomp filter installed through libc's prctl with ctypes,
which the loaded library cannot see, that kills the process on epoll_pwait2
or on prctl; then more sleeps, and a socket that must be found readable.

    python py_late_filter.py LIB pwait2|prctl

Prints "active=.. woke=.."; a filter the library missed kills the process
(SIGSYS) instead."""
import asyncio
import ctypes
import platform
import socket
import sys

import epollfix

ARCH = {"x86_64": (0xC000003E, 157), "aarch64": (0xC00000B7, 167)}
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2


class Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]


def kill_filter(nr):
    arch = ARCH[platform.machine()][0]
    insns = (Insn * 7)(Insn(0x20, 0, 0, 4), Insn(0x15, 1, 0, arch), Insn(0x06, 0, 0, 0x7FFF0000),
                       Insn(0x20, 0, 0, 0), Insn(0x15, 0, 1, nr), Insn(0x06, 0, 0, 0x80000000),
                       Insn(0x06, 0, 0, 0x7FFF0000))
    prog = Prog(7, insns)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                           ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) or \
            libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0):
        raise OSError(ctypes.get_errno(), "prctl")


async def sleeps(n):
    for _ in range(n):
        await asyncio.sleep(50e-6)


async def main(what):
    await sleeps(100)
    kill_filter(441 if what == "pwait2" else ARCH[platform.machine()][1])
    await sleeps(100)
    a, b = socket.socketpair()
    a.setblocking(False)
    loop = asyncio.get_running_loop()
    woke = asyncio.Event()
    loop.add_reader(a, woke.set)
    loop.call_later(0.002, b.send, b"x")
    await asyncio.wait_for(woke.wait(), 5)
    return 1


active = epollfix.enable(sys.argv[1])
print("active=%d woke=%d" % (active, asyncio.run(main(sys.argv[2]))))
