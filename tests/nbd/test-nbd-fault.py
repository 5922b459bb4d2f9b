#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""nbdkit-pmemz-plugin when its region's file is cut under its mapping.

  test-nbd-fault.py truncated

Any tenant of a file region can ftruncate it through the descriptor the
daemon hands out.  The plugin's loads and stores in the lost part then
fault (SIGBUS): each request that touches it must fail with EIO, and
nbdkit must go on serving the rest -- not die of the signal, which would
drop every client of the disk without an error.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nbdtest import MIB, errno, nbd, nbd_errno, run  # noqa: E402


def alive(k):
    rc = k.proc.poll()
    if rc is not None:
        why = f"killed by signal {-rc}" if rc < 0 else f"exited with {rc}"
        raise AssertionError(f"nbdkit {why}")


def expect_eio(k, what, fn):
    try:
        fn()
    except nbd.Error as e:
        if nbd_errno(e) != errno.EIO:
            try:  # a dropped connection: did nbdkit die?
                k.proc.wait(timeout=5)
            except Exception:
                pass
        alive(k)
        assert nbd_errno(e) == errno.EIO, f"{what}: {e} (errno {nbd_errno(e)}), expected EIO"
        return
    alive(k)
    raise AssertionError(f"{what}: succeeded on a truncated region")


def test_truncated(env):
    """Reads and writes of chunks cut off fail with EIO; the rest is served."""
    size = 16 * MIB
    ext = env.extent
    env.start_daemon()
    k = env.nbdkit(size=str(size))
    h = k.connect()
    small, whole, fresh, hole = 2, 5, 9, 12  # chunks
    h.pwrite(b"\x5a" * 4096, small * ext + 8192)  # written back (fresh, small)
    h.pwrite(b"\xa5" * ext, whole * ext)  # committed on the write path
    h.flush()
    assert h.pread(4096, small * ext + 8192) == b"\x5a" * 4096
    assert h.pread(ext, whole * ext) == b"\xa5" * ext

    # cut the file where the disk's first extent after the superblock starts
    # (a chunk's or one owned ahead, which the fresh chunk below takes): the
    # superblock stays
    st = env.region_stat()
    first = {t["name"]: min(r["first"] for r in t["runs"]) for t in env.tags("nbd/d")}
    lowest = min(v for n, v in first.items() if n.startswith("nbd/d/"))
    assert first["nbd/d"] < lowest, f"the superblock is not below the chunks: {first}"
    os.truncate(env.image, st["data_offset"] + lowest * ext)

    expect_eio(k, "read of a chunk cut off", lambda: h.pread(4096, whole * ext))
    expect_eio(k, "read of a written-back chunk cut off",
               lambda: h.pread(4096, small * ext + 8192))
    expect_eio(k, "write into a chunk cut off", lambda: h.pwrite(b"\x11" * 4096, whole * ext))
    expect_eio(k, "read across a chunk cut off and a hole",
               lambda: h.pread(ext, whole * ext + ext // 2))
    expect_eio(k, "partial zero of a chunk cut off",
               lambda: h.zero(4096, whole * ext + 4096))

    # what does not touch the lost part is served
    assert h.pread(4096, hole * ext) == bytes(4096), "a hole does not read zero"
    status = {}

    def cb(ctx, o, entries, err):
        status[ctx] = entries
        return 0

    h.block_status(size, 0, cb)
    alive(k)

    # a fresh chunk: its extent is beyond the cut too; the write or its FLUSH says so
    def fresh_write():
        h.pwrite(b"\x33" * 4096, fresh * ext)
        h.flush()

    expect_eio(k, "write into a fresh chunk and flush", fresh_write)
    assert h.pread(4096, hole * ext) == bytes(4096)

    # a new connection is served too (it needs nothing from the mapping)
    h2 = k.connect()
    assert h2.get_size() == size
    assert h2.pread(4096, (hole + 1) * ext) == bytes(4096)
    expect_eio(k, "read of a chunk cut off (second connection)",
               lambda: h2.pread(512, whole * ext + 512))
    h2.shutdown()
    h.shutdown()
    alive(k)
    with open(k.log, errors="replace") as f:
        log = f.read()
    assert "SIGBUS" in log, "the fault is not in nbdkit's log"
    k.stop()  # a clean exit: the write-back queue and the close survive it


TESTS = {
    "truncated": (test_truncated, {}),
}

if __name__ == "__main__":
    sys.exit(run(TESTS, sys.argv))
