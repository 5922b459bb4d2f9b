#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""nbdkit-pmemz-plugin against the real pmemzerod, through libnbd.

  test-nbd.py ops|restart|kill9|claim|quota|tags|qemu|sparse|size|multiconn|spares|flags|
              prewarm|zero

Each test is one ctest (tests/nbd/nbd.cmake, label nbd); nbdtest.py is
the harness.  PMEMZ_NBD_SEED fixes the random operations of 'ops'.
"""
import os
import random
import re
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nbdtest import MIB, allocation, errno, nbd, nbd_errno, run, skip, wait_for  # noqa: E402

HOLE = 1 | 2  # STATE_HOLE | STATE_ZERO


def seeded():
    seed = int(os.environ.get("PMEMZ_NBD_SEED", random.randrange(1 << 32)))
    print(f"seed {seed} (PMEMZ_NBD_SEED={seed} repeats this run)")
    return random.Random(seed)


class Model:
    """What the disk must read back, and which chunks are present."""

    def __init__(self, size, chunk):
        self.size, self.chunk = size, chunk
        self.data = bytearray(size)
        self.present = set()

    def chunks(self, off, n):
        return range(off // self.chunk, (off + n - 1) // self.chunk + 1)

    def write(self, off, buf):
        self.data[off:off + len(buf)] = buf
        for c in self.chunks(off, len(buf)):
            # zeros written into a hole leave it a hole (the plugin takes no
            # extent for them): a 1-byte write is 0x00 once in 256
            lo, hi = max(off, c * self.chunk), min(off + len(buf), (c + 1) * self.chunk)
            if c in self.present or any(buf[lo - off:hi - off]):
                self.present.add(c)

    def _whole(self, c, off, n):
        start, end = c * self.chunk, min((c + 1) * self.chunk, self.size)
        return off <= start and off + n >= end

    def zero(self, off, n, trim, may_trim=True):
        """TRIM (trim) or ZERO; a ZERO with NO_HOLE (not may_trim) keeps chunks allocated."""
        for c in self.chunks(off, n):
            if c not in self.present:
                continue
            if self._whole(c, off, n) and (trim or may_trim):
                start, end = c * self.chunk, min((c + 1) * self.chunk, self.size)
                self.data[start:end] = bytes(end - start)
                self.present.discard(c)
            elif not trim:
                lo, hi = max(off, c * self.chunk), min(off + n, (c + 1) * self.chunk)
                self.data[lo:hi] = bytes(hi - lo)

    def zero_writes(self, off, n, may_trim=True):
        """Would a ZERO write zeros into a present chunk (what FAST_ZERO refuses)?"""
        return any(c in self.present and not (may_trim and self._whole(c, off, n))
                   for c in self.chunks(off, n))

    def check(self, h):
        for off in range(0, self.size, 4 * MIB):
            n = min(4 * MIB, self.size - off)
            got = h.pread(n, off)
            if got != self.data[off:off + n]:
                bad = next(i for i in range(n) if got[i] != self.data[off + i])
                raise AssertionError(f"byte {off + bad}: read {got[bad]}, expected "
                                     f"{self.data[off + bad]}")

    def check_allocation(self, h):
        pos = 0
        for off, ln, flags in allocation(h, self.size):
            assert off == pos
            pos += ln
            for c in self.chunks(off, ln):
                want = 0 if c in self.present else HOLE
                assert flags == want, f"chunk {c}: block status {flags}, expected {want}"
            if flags & 2:
                assert not any(self.data[off:off + ln]), f"hole at {off} is not zero"
        assert pos == self.size


def rand_range(rng, m):
    """An offset and a length: within a chunk, across chunks, whole chunks."""
    kind = rng.randrange(4)
    if kind == 0:
        n = rng.choice([1, 512, 4096, rng.randrange(1, 70000)])
        off = rng.randrange(0, m.size - n + 1)
    elif kind == 1:
        c = rng.randrange(m.size // m.chunk)
        n = m.chunk * rng.randrange(1, 3)
        off = c * m.chunk
    elif kind == 2:
        n = rng.randrange(m.chunk // 2, 3 * m.chunk)
        off = rng.randrange(0, m.size - n + 1)
    else:
        off = (m.size // m.chunk) * m.chunk  # the partial last chunk
        n = m.size - off
    if off >= m.size:
        off, n = m.size - 1, 1
    return off, max(1, min(n, m.size - off))


def test_ops(env):
    """Every NBD command against a model of the disk, data verified."""
    rng = seeded()
    size = 24 * MIB + 12345  # the last chunk is partly outside the disk
    env.start_daemon()
    k = env.nbdkit(size=str(size))
    h = k.connect()
    assert h.get_size() == size
    assert h.can_multi_conn() and h.can_fua() and h.can_flush() and h.can_trim()
    assert h.can_zero() and h.can_fast_zero() and h.can_cache()
    assert h.can_meta_context("base:allocation")
    assert not h.is_read_only()
    m = Model(size, env.extent)
    m.check_allocation(h)
    for i in range(600):
        op = rng.choices(["write", "read", "trim", "zero", "flush", "status", "cache"],
                         [40, 20, 8, 12, 5, 10, 5])[0]
        off, n = rand_range(rng, m)
        if op == "write":
            buf = rng.randbytes(n)
            h.pwrite(buf, off, nbd.CMD_FLAG_FUA if rng.random() < 0.3 else 0)
            m.write(off, buf)
        elif op == "read":
            assert h.pread(n, off) == m.data[off:off + n], f"op {i}: read {off}+{n}"
        elif op == "trim":
            h.trim(n, off)
            m.zero(off, n, trim=True)
        elif op == "zero":
            flags = rng.choice([0, nbd.CMD_FLAG_NO_HOLE, nbd.CMD_FLAG_FAST_ZERO,
                                nbd.CMD_FLAG_FUA, nbd.CMD_FLAG_NO_HOLE | nbd.CMD_FLAG_FAST_ZERO])
            may_trim = not flags & nbd.CMD_FLAG_NO_HOLE
            slow = flags & nbd.CMD_FLAG_FAST_ZERO and m.zero_writes(off, n, may_trim)
            try:
                h.zero(n, off, flags)
                assert not slow, f"op {i}: a FAST_ZERO that writes zeros succeeded"
            except nbd.Error as e:
                # a fast zero that would write into a present chunk: refused, nothing changed
                assert slow and nbd_errno(e) == errno.ENOTSUP, e
                continue
            m.zero(off, n, trim=False, may_trim=may_trim)
        elif op == "flush":
            h.flush()
        elif op == "status":
            m.check_allocation(h)
        else:
            h.cache(n, off)
    m.check(h)
    m.check_allocation(h)
    # REQ_ONE: one extent, starting at the offset
    got = []
    h.block_status(size, 0, lambda c, o, e, err: got.extend(e) or 0, nbd.CMD_FLAG_REQ_ONE)
    assert len(got) == 2, got
    # past the end: refused by nbdkit, not by us
    try:
        h.pwrite(b"x", size)
        raise AssertionError("a write past the end succeeded")
    except nbd.Error:
        pass
    h.shutdown()
    # the same disk after a restart of nbdkit, without size=
    k.stop()
    k.size = None
    k.start()
    h = k.connect()
    assert h.get_size() == size
    m.check(h)
    m.check_allocation(h)
    h.shutdown()
    k.stop()
    # every extent the disk gave back was freed, nothing leaked
    tags = env.chunk_tags()
    assert len(tags) == len(m.present), (len(tags), len(m.present))
    env.stop_daemon()
    env.check_region()


def write_pattern(h, rng, m, n_writes, chunks=None):
    for _ in range(n_writes):
        c = rng.randrange(m.size // m.chunk) if chunks is None else rng.choice(chunks)
        off = c * m.chunk + rng.randrange(0, m.chunk - 4096, 4096)
        buf = rng.randbytes(4096)
        h.pwrite(buf, off)
        m.write(off, buf)


def test_restart(env):
    """nbdkit and pmemzerod restarts (clean and kill -9): flushed data survives."""
    rng = seeded()
    size = 32 * MIB
    env.start_daemon()
    k = env.nbdkit(size=str(size), extra=["reconnect-timeout=30"])
    h = k.connect()
    m = Model(size, env.extent)
    write_pattern(h, rng, m, 40, chunks=list(range(0, 16)))
    h.flush()
    h.shutdown()
    k.stop()
    k.start()
    h = k.connect()
    m.check(h)
    # the daemon restarts under a running nbdkit: reads and writes of present
    # chunks go on, fresh chunks wait for it to come back
    env.stop_daemon()
    m.check(h)
    write_pattern(h, rng, m, 5, chunks=sorted(m.present))
    env.start_daemon()
    write_pattern(h, rng, m, 20, chunks=list(range(16, 24)))
    h.flush()
    m.check(h)
    # and once more by kill -9.  The plugin's reserve holds leases of the
    # dead connection; the restarted daemon recovers them and zeroes them
    # again: a store into one of those after that would be stale data in
    # a fresh extent (regression: chunks were written before the commit)
    env.kill_daemon()
    env.start_daemon()
    env.wait_zeroed()
    write_pattern(h, rng, m, 20, chunks=list(range(24, 32)))
    h.trim(env.extent, 0)  # a FREE on the new connection
    m.zero(0, env.extent, trim=True)
    h.flush()
    m.check(h)
    m.check_allocation(h)
    h.shutdown()
    k.stop()
    k.start()
    h = k.connect()
    m.check(h)
    m.check_allocation(h)
    h.shutdown()
    k.stop()
    env.stop_daemon()
    env.check_region()


def test_kill9(env):
    """kill -9 of nbdkit in the middle of writes: every flushed write reads back.

    Writes into fresh chunks are acknowledged once staged for write-back;
    only FLUSH makes them durable.  Any other write reads back as written,
    as before (zero), or torn between the two (it was in flight), never
    with a byte of anything else.
    """
    rng = seeded()
    size = 48 * MIB
    block = 64 * 1024
    env.start_daemon()
    k = env.nbdkit(size=str(size))
    blocks = list(range(size // block))
    rng.shuffle(blocks)
    payload = {b: rng.randbytes(block) for b in blocks}
    acked, flushed = [], set()
    lock = threading.Lock()
    stop = threading.Event()

    def writer(sub):
        h = k.connect()
        mine = []
        try:
            for i, b in enumerate(sub):
                if stop.is_set():
                    return
                h.pwrite(payload[b], b * block, nbd.CMD_FLAG_FUA if i % 16 == 5 else 0)
                mine.append(b)
                with lock:
                    acked.append(b)
                    if i % 16 == 5:
                        flushed.add(b)  # FUA: this one is durable
                if i % 8 == 7:
                    h.flush()
                    with lock:
                        flushed.update(mine)
        except nbd.Error:
            pass  # the server died

    threads = [threading.Thread(target=writer, args=(blocks[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    wait_for(lambda: len(acked) >= len(blocks) // 3, "writes under way", proc=k.proc,
             log=k.log)
    k.kill()
    stop.set()
    for t in threads:
        t.join()
    assert flushed
    k.start()
    h = k.connect()
    n_new = n_torn = 0
    for b in blocks:
        got = h.pread(block, b * block)
        if b in flushed:
            assert got == payload[b], f"flushed write of block {b} lost"
        elif got != payload[b] and any(got):
            # not reported durable, and in flight (or being written back)
            # at the kill: torn, but every byte old (zero) or new
            assert all(g in (0, w) for g, w in zip(got, payload[b])), \
                f"block {b}: a byte neither old nor new"
            n_torn += 1
        n_new += got == payload[b]
    print(f"{len(flushed)} flushed writes verified; {len(acked)} acknowledged, "
          f"{n_new} read back new, {n_torn} torn")
    h.shutdown()
    k.stop()
    env.stop_daemon()
    env.check_region()


def test_claim(env):
    """A disk served by one nbdkit at a time; other disks of the region are not."""
    env.start_daemon()
    a = env.nbdkit(size="8M")
    b = env.nbdkit(wait=False)
    rc, log = b.expect_exit()
    assert rc != 0, "the second nbdkit on the disk was not refused"
    assert "served by another process" in log, log
    assert str(a.proc.pid) in log, "the refusal does not name the holder's pid"
    c = env.nbdkit(disk="other", size="8M")
    h = c.connect()
    h.pwrite(b"x" * 4096, 0)
    h.shutdown()
    # kill -9 of the holder releases its claim
    a.kill()
    d = env.nbdkit()
    h = d.connect()
    assert h.get_size() == 8 * MIB
    h.shutdown()


def test_quota(env):
    """Over the uid quota: ENOSPC reaches the NBD client; TRIM gives room back."""
    env.start_daemon()
    # no reserve: the quota counts leases held ahead too
    k = env.nbdkit(size="32M", extra=["reserve=0"])
    h = k.connect()
    written = []
    err = None
    for c in range(32):
        try:
            h.pwrite(bytes([c + 1]) * 4096, c * env.extent)
            written.append(c)
        except nbd.Error as e:
            err = e
            break
    assert err is not None, "the quota was never reached"
    assert nbd_errno(err) == errno.ENOSPC, f"expected ENOSPC, got {err}"
    # quota 8M: the superblock and 7 chunks
    assert len(written) == 7, written
    for c in written:
        assert h.pread(4096, c * env.extent) == bytes([c + 1]) * 4096
    h.trim(env.extent, 0)
    h.pwrite(b"y" * 4096, 31 * env.extent)
    assert h.pread(4096, 31 * env.extent) == b"y" * 4096
    # writes into present chunks need no space
    h.pwrite(b"z" * 4096, written[-1] * env.extent + 8192)
    h.shutdown()
    k.stop()
    env.stop_daemon()
    env.check_region()


def test_tags(env):
    """uid_max_tags reached at the commit: the write (synchronous) or the next
    FLUSH of every connection (write-back) fails with ENOSPC, once.  With
    extents owned ahead, a fresh chunk makes no tag: they stay in the
    journal when the fold cannot make theirs, across restarts."""
    sync = "writeback=0" in os.environ.get("PMEMZ_NBD_ARGS", "")
    env.start_daemon()
    if "ahead=0" not in os.environ.get("PMEMZ_NBD_ARGS", ""):
        return tags_journal(env)
    k = env.nbdkit(size="16M", extra=["reserve=0"])
    h, other = k.connect(), k.connect()
    for c in range(3):  # the superblock and three chunks: four tags
        h.pwrite(bytes([c + 1]) * 4096, c * env.extent)
    h.flush()
    try:
        h.pwrite(b"x" * 4096, 3 * env.extent)
        assert not sync, "a write over the tag limit succeeded"
        for conn in (h, other):
            try:
                conn.flush()
                raise AssertionError("FLUSH after a failed write-back succeeded")
            except nbd.Error as e:
                assert nbd_errno(e) == errno.ENOSPC, e
            conn.flush()  # reported once per connection
    except nbd.Error as e:
        assert sync, f"the write failed: {e}"
        assert nbd_errno(e) == errno.ENOSPC, e
    # lost, reads as never written; the others are intact
    assert not any(h.pread(4096, 3 * env.extent))
    for c in range(3):
        assert h.pread(4096, c * env.extent) == bytes([c + 1]) * 4096
    h.shutdown()
    other.shutdown()
    k.stop()
    env.stop_daemon()
    env.check_region()


def tags_journal(env):
    k = env.nbdkit(size="16M", extra=["reserve=0"])
    h = k.connect()
    for c in range(6):  # the superblock, a pool, and chunks past the limit of four tags
        h.pwrite(bytes([c + 1]) * 4096, c * env.extent)
    h.flush()
    h.shutdown()
    k.stop()
    with open(k.log) as f:
        assert "stay there until the next start" in f.read(), "the fold was not refused"
    assert len(env.tags("nbd/d")) <= 4, env.tags("nbd/d")
    k.start()
    h = k.connect()
    for c in range(6):
        assert h.pread(4096, c * env.extent) == bytes([c + 1]) * 4096, f"chunk {c}"
    h.shutdown()
    k.stop()
    env.stop_daemon()
    env.check_region()


def test_qemu(env):
    """qemu-img compare against a raw reference image."""
    rng = seeded()
    size = 16 * MIB
    env.start_daemon()
    k = env.nbdkit(size=str(size))
    ref = os.path.join(env.dir, "ref.img")
    with open(ref, "wb") as f:
        f.truncate(size)
    h = k.connect()
    with open(ref, "r+b") as f:
        for _ in range(60):
            n = rng.randrange(1, 200000)
            off = rng.randrange(0, size - n)
            buf = rng.randbytes(n)
            h.pwrite(buf, off)
            f.seek(off)
            f.write(buf)
    h.flush()

    def compare():
        return subprocess.run(["qemu-img", "compare", "-f", "raw", "-F", "raw", ref, k.uri()],
                              capture_output=True, text=True, timeout=120)

    p = compare()
    assert p.returncode == 0, f"qemu-img compare: {p.returncode}\n{p.stdout}{p.stderr}"
    h.pwrite(b"\xff", 5 * MIB + 3)
    p = compare()
    assert p.returncode == 1, f"a changed byte was not seen: {p.returncode}\n{p.stdout}"
    h.shutdown()


def test_sparse(env):
    """nbdcopy of a sparse image keeps its holes: space taken ~ data written."""
    rng = seeded()
    size = 40 * MIB
    env.start_daemon()
    k = env.nbdkit(size=str(size))
    src = os.path.join(env.dir, "sparse.img")
    pieces = [(c * env.extent + rng.randrange(0, env.extent // 2), rng.randrange(1, 300000))
              for c in (1, 7, 8, 20, 33)]
    with open(src, "wb") as f:
        f.truncate(size)
        for off, n in pieces:
            f.seek(off)
            f.write(rng.randbytes(n))
    p = subprocess.run(["nbdcopy", "--flush", src, k.uri()], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    # the journal's chunks are tagged by the fold at the latest
    k.stop()
    tags = env.chunk_tags()
    k.start()
    touched = {i for off, n in pieces for i in range(off // env.extent,
                                                     (off + n - 1) // env.extent + 1)}
    allocated = sum(t.get("bytes", t.get("size", 0)) for t in tags)
    data = sum(n for _, n in pieces)
    print(f"data {data} bytes in {len(touched)} chunks; allocated {allocated} bytes")
    assert len(tags) == len(touched), f"{len(tags)} chunks allocated, {len(touched)} written"
    assert allocated <= data + 2 * len(touched) * env.extent
    h = k.connect()
    holes = sum(ln for _, ln, fl in allocation(h, size) if fl == HOLE)
    assert holes == size - len(touched) * env.extent
    h.shutdown()
    dst = os.path.join(env.dir, "back.img")
    p = subprocess.run(["nbdcopy", k.uri(), dst], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert subprocess.run(["cmp", src, dst]).returncode == 0


def test_size(env):
    """Sizes: beyond the chunk map refused at start; grow; shrink only over zeros."""
    env.start_daemon()
    # 1 MiB extents: the chunk map holds 16 TiB
    k = env.nbdkit(size="17T", wait=False)
    rc, log = k.expect_exit()
    assert rc != 0 and "chunk map" in log, log
    k = env.nbdkit(disk="new", wait=False)
    rc, log = k.expect_exit()
    assert rc != 0 and "give size=" in log, log
    k = env.nbdkit(size="16T")  # thin: far beyond the 64M region
    h = k.connect()
    assert h.get_size() == 16 << 40
    h.pwrite(b"a" * 4096, (16 << 40) - 4096)
    h.shutdown()
    k.stop()
    k.size = "8M"
    k.start(wait=False)
    rc, log = k.expect_exit()
    assert rc != 0 and "data beyond" in log, log
    env.nbdkits.remove(k)
    # a fresh disk: grow, shrink over zeros, shrink refused over data
    k = env.nbdkit(disk="g", size="6M")
    h = k.connect()
    h.pwrite(b"b" * 4096, 5 * MIB)
    h.shutdown()
    k.stop()
    k.size = "10M"
    k.start()
    h = k.connect()
    assert h.get_size() == 10 * MIB
    assert h.pread(4096, 5 * MIB) == b"b" * 4096
    assert not any(h.pread(4 * MIB, 6 * MIB))
    h.shutdown()
    k.stop()
    k.size = None
    k.start()
    h = k.connect()
    assert h.get_size() == 10 * MIB  # recorded
    h.shutdown()
    k.stop()
    k.size = str(5 * MIB + 4096)  # chunk 5 holds data up to 5M+4K: fine
    k.start()
    k.stop()
    k.size = str(5 * MIB + 100)  # cuts into the data
    k.start(wait=False)
    rc, log = k.expect_exit()
    assert rc != 0 and "data beyond" in log, log
    env.stop_daemon()
    env.check_region()


def test_multiconn(env):
    """Two connections racing writes into the same fresh chunks: both land."""
    size = 48 * MIB
    env.start_daemon()
    k = env.nbdkit(size=str(size))
    h1, h2 = k.connect(), k.connect()
    n = size // env.extent
    a = [bytes([1 + c % 200]) * 4096 for c in range(n)]
    b = [bytes([2 + c % 200]) * 4096 for c in range(n)]
    errors = []
    barrier = threading.Barrier(2)

    def writer(h, bufs, at):
        try:
            for c in range(n):
                if c % 8 == 0:
                    barrier.wait()
                h.pwrite(bufs[c], c * env.extent + at)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
            barrier.abort()

    t1 = threading.Thread(target=writer, args=(h1, a, 0))
    t2 = threading.Thread(target=writer, args=(h2, b, 8192))
    t1.start()
    t2.start()
    t1.join()
    t2.join()
    assert not errors, errors
    h1.flush()
    h2.flush()
    for c in range(n):
        for h in (h1, h2):
            assert h.pread(4096, c * env.extent) == a[c], f"chunk {c}: the first write lost"
            assert h.pread(4096, c * env.extent + 8192) == b[c], f"chunk {c}: second lost"
    h1.shutdown()
    h2.shutdown()
    k.stop()  # the journal's chunks folded into their tags
    assert len(env.chunk_tags()) == n
    env.stop_daemon()
    env.check_region()


def race_fresh(h, chunks, extent, inflight=16):
    """inflight 4 KiB writes at once into each fresh chunk: several lease, one wins."""
    data = {}
    for c in chunks:
        bufs = []  # alive until the commands are done
        for i in range(inflight):
            buf = bytes([1 + (c * 7 + i) % 250]) * 4096
            off = c * extent + i * 4096
            data[off] = buf
            bufs.append(nbd.Buffer.from_bytearray(bytearray(buf)))
            h.aio_pwrite(bufs[-1], off)
        while h.aio_in_flight() > 0:
            h.poll(-1)
    return data


def read_log(k):
    with open(k.log, errors="replace") as f:
        return f.read()


def test_spares(env):
    """A lost race's lease is kept for the next fresh chunk, and one of an
    older connection (the daemon was killed and restarted meanwhile) is
    dropped, never committed or written (regression for the epoch rule)."""
    size = 48 * MIB
    env.start_daemon()
    # a lease delay (pmemz-nbd-shim) makes the requests into one fresh chunk lose races
    # spares are of the fallback path: without extents owned ahead
    k = env.nbdkit(size=str(size), extra=["reconnect-timeout=30", "spares=8", "ahead=0"],
                   shim={"PMEMZ_SHIM_LEASE_DELAY_MS": "20"})
    h = k.connect()
    n = size // env.extent
    written = {}
    first = 0

    def held():
        log = read_log(k)
        return log.count("spare lease kept") - log.count("spare lease used")

    # races are up to the scheduler: go on until spares are held (bounded)
    while first < n // 2 and held() <= 0:
        written.update(race_fresh(h, range(first, first + 4), env.extent))
        first += 4
    if held() <= 0:
        h.shutdown()
        k.stop()
        env.stop_daemon()
        skip("no request lost a race for a fresh chunk: nothing to keep")
    h.flush()
    # the spares die with the connection; the restarted daemon zeroes them again
    env.kill_daemon()
    env.start_daemon()
    env.wait_zeroed()
    # a FREE finds the connection broken and reconnects; then fresh chunks
    h.trim(env.extent, 0)  # chunk 0
    for i in range(16):
        written[i * 4096] = bytes(4096)
    for c in range(first, first + 4):
        buf = bytes([0xA5]) * 4096
        h.pwrite(buf, c * env.extent)
        written[c * env.extent] = buf
    h.flush()
    log = read_log(k)
    assert "spare lease(s) of an older connection" in log, "an old connection's spare was not dropped"
    for off, buf in written.items():
        assert h.pread(4096, off) == buf, f"offset {off}: lost"
    assert len(env.chunk_tags()) == first + 4 - 1
    h.shutdown()
    k.stop()
    log = read_log(k)
    assert "spare leases:" in log, log[-2000:]
    env.stop_daemon()
    env.check_region()


def test_flags(env):
    """The plugin honours NBD's flags: FAST_ZERO fails with ENOTSUP where
    zeros would be written, and changes nothing; it frees whole chunks at
    once; TRIM with FUA is durable on return (a kill -9 right after it
    leaves the chunk a hole), also for a chunk that the journal maps (not
    folded into its tag yet)."""
    ext = env.extent
    env.start_daemon()
    # the new parameters refuse what they cannot take, saying why
    for bad, why in (("sync-interval=3600001", "at most 3600000"), ("sync-interval=soon", "soon"),
                     ("ahead=lots", "lots")):
        b = env.nbdkit(size=str(8 * ext), extra=[bad], wait=False, name="bad")
        rc, log = b.expect_exit()
        assert rc != 0 and why in log, (bad, log[-500:])
        env.nbdkits.remove(b)
    # the page-touch parameters prewarm= replaced still start, ignored, one line each
    k = env.nbdkit(size=str(8 * ext), extra=["sync-interval=0", "warm=sometimes", "prefault=true"])
    for gone in ("warm=sometimes", "prefault=true"):
        said = read_log(k).count(f"{gone} is deprecated and ignored")
        assert said == 1, f"{gone}: {said} deprecation line(s)\n{read_log(k)[-1500:]}"
    h = k.connect()
    for c in range(4):
        h.pwrite(bytes([0x40 + c]) * ext, c * ext)
    h.flush()
    h.pwrite(b"\x77" * 4096, 4 * ext)  # chunk 4: mapped by the journal, not folded yet
    # a partial fast zero of a present chunk would write: ENOTSUP, nothing changed
    try:
        h.zero(4096, 1 * ext + 8192, nbd.CMD_FLAG_FAST_ZERO)
        raise AssertionError("a slow FAST_ZERO succeeded")
    except nbd.Error as e:
        assert nbd_errno(e) == errno.ENOTSUP, f"FAST_ZERO: {e}"
    assert h.pread(ext, 1 * ext) == bytes([0x41]) * ext
    # ... also when only one piece of it would write
    try:
        h.zero(ext + 4096, 5 * ext, nbd.CMD_FLAG_FAST_ZERO)  # chunk 5 whole (absent), 6 absent
        h.zero(ext + 4096, 2 * ext, nbd.CMD_FLAG_FAST_ZERO)  # chunk 2 whole, 3 partly
        raise AssertionError("a partly slow FAST_ZERO succeeded")
    except nbd.Error as e:
        assert nbd_errno(e) == errno.ENOTSUP, f"FAST_ZERO: {e}"
    assert h.pread(ext, 2 * ext) == bytes([0x42]) * ext, "a refused FAST_ZERO changed chunk 2"
    # whole chunks: fast, given back, holes
    h.zero(ext, 1 * ext, nbd.CMD_FLAG_FAST_ZERO)
    assert h.pread(ext, 1 * ext) == bytes(ext)
    assert [f for o, n, f in allocation(h, 8 * ext) if o == ext][0] & 2, "chunk 1 is not a hole"
    # the slow way still works without the flag
    h.zero(4096, 3 * ext + 4096)
    assert h.pread(8192, 3 * ext) == bytes([0x43]) * 4096 + bytes(4096)
    # TRIM + FUA of chunk 2 (durable) and of chunk 4 (mapping pending), then kill -9
    h.trim(ext, 2 * ext, nbd.CMD_FLAG_FUA)
    h.trim(ext, 4 * ext, nbd.CMD_FLAG_FUA)
    k.kill()
    k.start()
    h = k.connect()
    for c in (1, 2, 4):
        assert h.pread(ext, c * ext) == bytes(ext), f"chunk {c} is not zero after the kill"
    assert h.pread(ext, 0) == bytes([0x40]) * ext
    names = {t["name"] for t in env.chunk_tags()}
    assert "nbd/d/2" not in names and "nbd/d/4" not in names, names
    h.shutdown()
    k.stop()
    env.stop_daemon()
    env.check_region()


def region_rss(k, image):
    """(Size, Rss) in KiB of nbdkit's mapping of the region file."""
    size = rss = 0
    mine = False
    with open(f"/proc/{k.proc.pid}/smaps") as f:
        for line in f:
            fields = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                mine = fields[-1] == image
            elif mine and fields[0] == "Size:":
                size += int(fields[1])
            elif mine and fields[0] == "Rss:":
                rss += int(fields[1])
    return size, rss


def test_prewarm(env):
    """prewarm=true faults the region's whole mapping in at start (loads
    only: every byte reads as before, pmemzctl check stays clean);
    prewarm=false leaves it to the writes; a bad value is refused."""
    ext = env.extent
    env.start_daemon()
    b = env.nbdkit(size=str(8 * ext), extra=["prewarm=sometimes"], wait=False, name="bad")
    rc, log = b.expect_exit()
    assert rc != 0 and "sometimes" in log, log[-500:]
    env.nbdkits.remove(b)
    env.wait_zeroed()
    k = env.nbdkit(size=str(8 * ext), extra=["prewarm=true"])
    wait_for(lambda: "pmemz: prewarm: " in read_log(k), "the prewarm walk", proc=k.proc,
             log=k.log)
    size, rss = region_rss(k, env.image)
    assert size > 0 and rss >= size * 9 // 10, f"prewarm=true: {rss} KiB of {size} mapped"
    assert re.search(r"prewarm: \d+ MiB of the region's mapping faulted in .* 0 step\(s\) faulted",
                     read_log(k)), read_log(k)[-1000:]
    h = k.connect()
    h.pwrite(b"\x5a" * 4096, 3 * ext)
    h.flush()
    assert h.pread(4096, 3 * ext) == b"\x5a" * 4096
    assert h.pread(4096, 2 * ext) == bytes(4096)
    h.shutdown()
    k.stop()
    k = env.nbdkit(size=str(8 * ext), extra=["prewarm=false"], name="cold")
    h = k.connect()
    assert h.pread(4096, 3 * ext) == b"\x5a" * 4096
    size, rss = region_rss(k, env.image)
    assert rss < size // 2, f"prewarm=false: {rss} KiB of {size} mapped"
    assert "pmemz: prewarm" not in read_log(k), read_log(k)[-1000:]
    h.shutdown()
    k.stop()
    env.stop_daemon()
    env.check_region()


def chunk_holes(h, size, ext):
    """The chunks block status reports as holes (that read zero)."""
    return {c for off, ln, fl in allocation(h, size) if fl == HOLE
            for c in range(off // ext, (off + ln - 1) // ext + 1)}


def qemu_io(k, cmd):
    p = subprocess.run(["qemu-io", "-f", "raw", "-c", cmd, k.uri()], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and "error" not in p.stdout.lower(), \
        f"qemu-io {cmd}: {p.returncode}\n{p.stdout}{p.stderr}"


def test_zero(env):
    """ZERO honours NO_HOLE (NBD_CMD_FLAG_NO_HOLE: nbdkit passes no
    MAY_TRIM): a written chunk stays allocated and reads zero, also after
    a kill -9; a hole stays a hole; FAST_ZERO refuses what would write.
    Without NO_HOLE whole chunks are given back.  Through libnbd, qemu-io
    (write -z asks for NO_HOLE, write -z -u may unmap) and qemu-img
    convert (its zeroing may trim, and asks to be fast)."""
    ext = env.extent
    n = 10
    size = n * ext
    env.start_daemon()
    k = env.nbdkit(size=str(size))
    h = k.connect()
    want = [bytearray([0x50 + c]) * ext for c in range(8)] + [bytearray(ext)] * 2
    for c in range(8):
        h.pwrite(bytes(want[c]), c * ext)
    h.flush()
    h.zero(ext, 0, nbd.CMD_FLAG_NO_HOLE)
    h.zero(ext, 5 * ext, nbd.CMD_FLAG_NO_HOLE | nbd.CMD_FLAG_FUA)
    h.zero(2 * ext, 8 * ext, nbd.CMD_FLAG_NO_HOLE)  # holes: nothing to allocate
    h.zero(ext, 1 * ext)  # MAY_TRIM: given back
    h.zero(4096, 2 * ext + 4096, nbd.CMD_FLAG_NO_HOLE)  # part of a chunk: written
    want[0] = want[1] = want[5] = bytearray(ext)
    want[2][4096:8192] = bytes(4096)
    try:
        h.zero(ext, 3 * ext, nbd.CMD_FLAG_NO_HOLE | nbd.CMD_FLAG_FAST_ZERO)
        raise AssertionError("a FAST_ZERO with NO_HOLE of a written chunk succeeded")
    except nbd.Error as e:
        assert nbd_errno(e) == errno.ENOTSUP, f"FAST_ZERO: {e}"
    h.zero(2 * ext, 8 * ext, nbd.CMD_FLAG_NO_HOLE | nbd.CMD_FLAG_FAST_ZERO)  # holes: fast

    def check(h, holes, when):
        for c in range(n):
            assert h.pread(ext, c * ext) == want[c], f"{when}: chunk {c} reads wrong"
        got = chunk_holes(h, size, ext)
        assert got == holes, f"{when}: holes {sorted(got)}, expected {sorted(holes)}"

    check(h, {1, 8, 9}, "after the zeros")
    # the zeros written into present chunks were durable on return
    h.shutdown()
    k.kill()
    k.start()
    h = k.connect()
    check(h, {1, 8, 9}, "after kill -9 of nbdkit")
    h.shutdown()
    qemu_io(k, f"write -z {3 * ext} {ext}")
    qemu_io(k, f"write -z -u {4 * ext} {ext}")
    want[3] = want[4] = bytearray(ext)
    h = k.connect()
    check(h, {1, 4, 8, 9}, "after qemu-io write -z")
    h.shutdown()
    k.stop()
    names = {t["name"] for t in env.chunk_tags()}
    assert names == {f"nbd/d/{c}" for c in (0, 2, 3, 5, 6, 7)}, sorted(names)
    # qemu-img convert onto the disk: one chunk of data, zeros elsewhere
    src = os.path.join(env.dir, "src.img")
    with open(src, "wb") as f:
        f.truncate(size)
        f.seek(6 * ext + 4096)
        f.write(b"\x66" * 4096)
    k.start()
    p = subprocess.run(["qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", src, k.uri()],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"qemu-img convert: {p.returncode}\n{p.stdout}{p.stderr}"
    want = [bytearray(ext) for _ in range(n)]
    want[6][4096:8192] = b"\x66" * 4096
    h = k.connect()
    check(h, set(range(n)) - {6}, "after qemu-img convert")
    h.shutdown()
    k.stop()
    env.stop_daemon()
    env.check_region()


TESTS = {
    "flags": (test_flags, {}),
    "ops": (test_ops, {}),
    "restart": (test_restart, {}),
    "kill9": (test_kill9, {}),
    "claim": (test_claim, {}),
    "quota": (test_quota, {"extra_region": "uid_quota = 8M\n"}),
    "tags": (test_tags, {"extra_region": "uid_max_tags = 4\n"}),
    "qemu": (test_qemu, {}),
    "sparse": (test_sparse, {}),
    "size": (test_size, {}),
    "multiconn": (test_multiconn, {}),
    "spares": (test_spares, {}),
    "prewarm": (test_prewarm, {}),
    "zero": (test_zero, {}),
}

if __name__ == "__main__":
    sys.exit(run(TESTS, sys.argv))
