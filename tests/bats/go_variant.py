"""A patched copy of a Go test program (tests/bats/go.bats):

    go_variant.py SRC DST [--version V] [--symbol NAME WHERE] [--text-start WHERE]

--version: the build information names release V (as long as the program's own).
--symbol: .symtab's entry NAME points elsewhere: WHERE is +N (N bytes past
where it pointed) or "stale" (where, taken as runtime.sched, lastpoll reads 0
and pollUntil a constant past deadline: a word of .rodata).
--text-start: .gopclntab's header names another text start: WHERE is +N (N
bytes past its own) or a number (that address; 0: none, as Go 1.26 writes)."""
import argparse
import struct

ap = argparse.ArgumentParser()
ap.add_argument('src')
ap.add_argument('dst')
ap.add_argument('--version')
ap.add_argument('--symbol', nargs=2)
ap.add_argument('--text-start')
a = ap.parse_args()

data = bytearray(open(a.src, 'rb').read())
shoff, = struct.unpack_from('<Q', data, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3a)
secs = [struct.unpack_from('<IIQQQQIIQQ', data, shoff + i * shentsize) for i in range(shnum)]


def name(off):
    base = secs[shstrndx][4] + off
    return data[base:data.index(b'\0', base)].decode()


by = {name(s[0]): s for s in secs}

if a.version:
    bi = by['.go.buildinfo']
    # The version, inline after 32 bytes: a one-byte length, then its bytes.
    n = data[bi[4] + 32]
    assert n == len(a.version), 'versions of different lengths'
    data[bi[4] + 33:bi[4] + 33 + n] = a.version.encode()


def stale():
    ro = by['.rodata']
    for off in range(0, ro[5] - 16, 8):
        z, v = struct.unpack_from('<qq', data, ro[4] + off)
        if z == 0 and 0 < v < 10**12:
            return ro[3] + off - 8  # lastpoll is at +8, pollUntil at +16
    raise SystemExit('no constant found')


if a.symbol:
    symbol, where = a.symbol[0].encode(), a.symbol[1]
    sym, strtab = by['.symtab'], by['.strtab']
    for i in range(sym[5] // 24):
        at = sym[4] + i * 24
        n, = struct.unpack_from('<I', data, at)
        s = strtab[4] + n
        if data[s:data.index(b'\0', s)] == symbol:
            v, = struct.unpack_from('<Q', data, at + 8)
            struct.pack_into('<Q', data, at + 8, stale() if where == 'stale' else v + int(where))
            break
    else:
        raise SystemExit('no ' + symbol.decode())

if a.text_start:
    # pcHeader: magic, pads, minLC, ptrSize, nfunc, nfiles, then textStart
    at = by['.gopclntab'][4] + 24
    v, = struct.unpack_from('<Q', data, at)
    w = a.text_start
    struct.pack_into('<Q', data, at, v + int(w[1:]) if w[0] == '+' else int(w, 0))

open(a.dst, 'wb').write(data)
