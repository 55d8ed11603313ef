"""fileio.py - what the tests' Python checkers share for reading files."""
import os


def pread_all(fd, n, off):
    """Up to n bytes of fd from off: fewer only at the end of the file."""
    out = bytearray()
    while len(out) < n:
        b = os.pread(fd, n - len(out), off + len(out))
        if not b:
            break
        out += b
    return bytes(out)
