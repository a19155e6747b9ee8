#!/usr/bin/env python3
"""Writes a copy of a Go executable (64-bit, little-endian) that still runs
but whose reading costs its reader what a user's forged file would: the
agent and the supervisor read such files as root (tests/bats/agent.bats).

  forge_go.py big-symtab SRC DST SIZE   DST is SIZE bytes, sparse, its .symtab
                                        every byte after the program's own
  forge_go.py big-segment SRC DST SIZE  DST has a read-only PT_LOAD of SIZE
                                        sparse bytes (in place of PT_GNU_STACK)
                                        and its .symtab and .gopclntab renamed,
                                        so the function table is searched for
                                        in the loaded segments
  forge_go.py release SRC DST VERSION   its build information names VERSION
                                        (as long as the real one) instead
"""
import os
import struct
import sys

PT_LOAD, PT_GNU_STACK, PF_R = 1, 0x6474E551, 4


def sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    names = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)[0]
    for i in range(shnum):
        at = shoff + i * shentsize
        name = struct.unpack_from("<I", data, at)[0] + names
        yield bytes(data[name:data.index(b"\0", name)]), at, name


def main():
    kind, src, dst, arg = sys.argv[1:5]
    data = bytearray(open(src, "rb").read())
    size = 0
    end = (len(data) + 4095) & ~4095  # the sparse part starts a page after the program
    if kind == "big-symtab":
        size = int(arg)
        for name, at, _ in sections(data):
            if name == b".symtab":
                struct.pack_into("<QQ", data, at + 0x18, end, size - end)
    elif kind == "big-segment":
        size = end + int(arg)
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        for i in range(phnum):
            at = phoff + i * phentsize
            if struct.unpack_from("<I", data, at)[0] == PT_GNU_STACK:
                # p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
                vaddr = 0x7E0000000000 + end
                struct.pack_into("<IIQQQQQQ", data, at, PT_LOAD, PF_R, end, vaddr, vaddr,
                                 int(arg), int(arg), 4096)
                break
        else:
            sys.exit("no PT_GNU_STACK")
        for name, _, at in sections(data):
            if name in (b".symtab", b".gopclntab"):
                data[at + len(name) - 1] = ord("X")
    elif kind == "release":
        old = data.find(b"\xff Go buildinf:")
        n = data[old + 32]
        if n != len(arg):
            sys.exit("the release must be %d bytes" % n)
        data[old + 33:old + 33 + n] = arg.encode()
    else:
        sys.exit(__doc__)
    with open(dst, "wb") as f:
        f.write(data)
        if size:
            f.truncate(size)
    os.chmod(dst, 0o755)


main()
