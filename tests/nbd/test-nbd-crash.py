#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The disk's crash guarantees, against a model, through libnbd.

  test-nbd-crash.py loop|sync-after-restart|journal-wrap|journal-adopt|journal-partial|
                    no-journal|journal-hostile|superblock-v1|features-incompat|
                    features-ro-compat|features-compat

The other tests: the journal filling, wrapping, refused and forged; the
superblock's versions and feature masks (docs/on-media-format.md).

A loop of rounds: 4 KiB writes into random chunks (some FUA), FLUSHes at
random points, and at a random instant kill -9 of nbdkit or of pmemzerod.
After every round each block is checked against the model (NBD's rules,
and the plugin's journal: docs in disk-journal.c):
  - a block covered by a completed FLUSH or FUA reads its data, or a
    later write of it;
  - any other block reads its data, an older one, or zero if its chunk's
    mapping was never made durable -- never anything else;
  - when only pmemzerod died, nbdkit lost nothing: every acknowledged
    write reads back;
  - `pmemzctl check` of the crash image is clean (pmemzerod killed), the
    pool tags of a killed nbdkit are emptied and freed at its next start,
    and a clean stop leaves exactly one chunk tag per chunk written and no
    pool tag.
A variant's settings: PMEMZ_NBD_JOURNAL_SLOTS=N, a disk made with a journal
of N records (the plugin's test build; every later start the installed
plugin); PMEMZ_SHIM_* (tests/nbd/pmemz-shim.c), MOVE requests refused.
"""
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nbdtest import MIB, nbd, run, wait_for  # noqa: E402

BLOCK = 4096
ZERO = bytes(BLOCK)


def seeded():
    import random
    seed = int(os.environ.get("PMEMZ_NBD_SEED", random.randrange(1 << 32)))
    print(f"seed {seed} (PMEMZ_NBD_SEED={seed} repeats this run)")
    return random.Random(seed)


class Model:
    """Per block: the value a sync point covered, and the values written since."""

    def __init__(self, size, chunk):
        self.chunk = chunk
        self.n = size // BLOCK
        self.durable = [ZERO] * self.n  # covered by a completed FLUSH or FUA
        self.since = [[] for _ in range(self.n)]  # written (or in flight) since, in order
        self.synced = set()  # chunks whose mapping a sync point covered
        self.lock = threading.Lock()

    def chunk_of(self, b):
        return b * BLOCK // self.chunk

    def writing(self, b, v):
        with self.lock:
            self.since[b].append(v)

    def fua_done(self, b, v):
        with self.lock:
            self.durable[b] = v
            self.since[b] = []
            self.synced.add(self.chunk_of(b))

    def flush_done(self, acked):
        """acked: the blocks written before the FLUSH was sent, with their last values."""
        with self.lock:
            for b, v in acked.items():
                self.durable[b] = v
                if v in self.since[b]:
                    self.since[b] = self.since[b][self.since[b].index(v) + 1:]
                self.synced.add(self.chunk_of(b))

    def allowed(self, b):
        ok = [self.durable[b], *self.since[b]]
        if self.chunk_of(b) not in self.synced:
            ok.append(ZERO)
        return ok

    def check(self, h, strict):
        """strict: nothing was lost (only the daemon died): the last write of each block."""
        torn = 0
        for start in range(0, self.n, 256):
            cnt = min(256, self.n - start)
            data = h.pread(cnt * BLOCK, start * BLOCK)
            for i in range(cnt):
                b = start + i
                got = data[i * BLOCK:(i + 1) * BLOCK]
                last = self.since[b][-1] if self.since[b] else self.durable[b]
                if strict:
                    assert got == last, f"block {b}: an acknowledged write was lost"
                    continue
                ok = self.allowed(b)
                if got in ok:
                    continue
                # a write in flight at the kill: torn, every byte from an allowed value
                assert all(any(got[j] == v[j] for v in ok) for j in range(BLOCK)), \
                    f"block {b} (chunk {self.chunk_of(b)}): reads bytes it was never written"
                torn += 1
        return torn

    def settle(self, h):
        """After a check: what the disk reads now is durable (a restarted nbdkit maps only that)."""
        for start in range(0, self.n, 256):
            cnt = min(256, self.n - start)
            data = h.pread(cnt * BLOCK, start * BLOCK)
            for i in range(cnt):
                b = start + i
                self.durable[b] = data[i * BLOCK:(i + 1) * BLOCK]
                self.since[b] = []
                if self.durable[b] != ZERO:
                    self.synced.add(self.chunk_of(b))


class Writer(threading.Thread):
    """Writes, FUA writes and FLUSHes until told to stop or the server dies."""

    def __init__(self, k, m, rng):
        super().__init__()
        self.k, self.m, self.rng = k, m, rng
        self.stop = threading.Event()
        self.ops = self.flushes = self.fuas = 0
        self.error = None

    def run(self):
        try:
            h = self.k.connect()
        except nbd.Error as e:
            self.error = e
            return
        acked = {}
        try:
            while not self.stop.is_set():
                op = self.rng.random()
                if op < 0.08:
                    sent = dict(acked)
                    h.flush()
                    self.m.flush_done(sent)
                    acked.clear()
                    self.flushes += 1
                    continue
                b = self.rng.randrange(self.m.n)
                v = self.rng.randbytes(BLOCK)
                fua = op < 0.16
                self.m.writing(b, v)
                h.pwrite(v, b * BLOCK, nbd.CMD_FLAG_FUA if fua else 0)
                if fua:
                    self.m.fua_done(b, v)
                    self.fuas += 1
                acked[b] = v
                self.ops += 1
        except nbd.Error as e:
            self.error = e  # the server died under us
        finally:
            try:
                h.shutdown()
            except nbd.Error:
                pass


# a variant whose MOVEs are refused now and then: pools may stay, adopted
REFUSING = any(k.startswith("PMEMZ_SHIM_REFUSE_MOVES") for k in os.environ)


def pool_seqs(env):
    return {int(t["name"].rsplit("/", 1)[1]) for t in env.tags("nbd/d/pool/")}


def pool_extents(env, seqs):
    """{seq: the extents of pool tag seq}, for those of seqs that exist."""
    out = {}
    for t in env.tags("nbd/d/pool/"):
        seq = int(t["name"].rsplit("/", 1)[1])
        if seq in seqs:
            out[seq] = {r["first"] + i for r in t["runs"] for i in range(r["count"])}
    return out


def round_kill_nbdkit(env, k, m, rng):
    w = Writer(k, m, rng)
    w.start()
    wait_for(lambda: w.ops >= 30 or not w.is_alive(), "writes under way", proc=k.proc, log=k.log)
    time.sleep(rng.uniform(0.0, 0.3))
    before = pool_seqs(env)
    k.kill()
    w.stop.set()
    w.join()
    k.start()
    h = k.connect()
    torn = m.check(h, strict=False)
    m.settle(h)
    h.shutdown()
    # the killed process's pool tags: emptied and freed at this start, never used again;
    # with moves refused, one stays (adopted) while the journal maps a chunk into it
    held = set(journal(env)[1].values()) if REFUSING else set()
    left = before & pool_seqs(env)
    idle = sorted(s for s, ext in pool_extents(env, left).items() if not ext & held)
    assert not idle, f"pool tags {idle} of the killed nbdkit survived its restart"
    return f"nbdkit killed after {w.ops} writes ({w.fuas} FUA, {w.flushes} flushes), {torn} torn"


def round_kill_daemon(env, k, m, rng):
    w = Writer(k, m, rng)
    w.start()
    wait_for(lambda: w.ops >= 30 or not w.is_alive(), "writes under way", proc=k.proc, log=k.log)
    time.sleep(rng.uniform(0.0, 0.3))
    env.kill_daemon()
    # the crash image: every MOVE in it whole or not at all, nothing else to report
    p = subprocess.run([env.ctl_path, "check", env.image], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, f"pmemzctl check of the crash image: {p.returncode}\n" \
                              f"{p.stdout}{p.stderr}"
    ops = w.ops
    time.sleep(rng.uniform(0.05, 0.3))
    env.start_daemon()
    wait_for(lambda: w.ops >= ops + 20 or not w.is_alive(), "writes after the restart",
             proc=k.proc, log=k.log, timeout=60)
    w.stop.set()
    w.join()
    assert w.error is None, f"a request failed across the daemon's restart: {w.error}"
    h = k.connect()
    h.flush()
    m.check(h, strict=True)
    m.settle(h)
    h.shutdown()
    return f"pmemzerod killed under {w.ops} writes ({ops} before the kill), nothing lost"


def test_loop(env):
    rng = seeded()
    rounds = int(os.environ.get("PMEMZ_NBD_ROUNDS", "10"))
    size = 40 * MIB
    env.start_daemon()
    k = env.nbdkit(size=str(size), extra=["reconnect-timeout=30", "sync-interval=150"],
                   journal_slots=os.environ.get("PMEMZ_NBD_JOURNAL_SLOTS"))
    m = Model(size, env.extent)
    for i in range(rounds):
        kill_daemon = rng.random() < 0.5
        how = round_kill_daemon if kill_daemon else round_kill_nbdkit
        print(f"round {i}: {how(env, k, m, rng)}", flush=True)
    k.stop()
    if REFUSING:
        # chunks the refusals left in the journal: a start that moves them (no refusal),
        # a clean stop; the journal's length is the superblock's
        k = env.nbdkit(size=str(size), extra=["reconnect-timeout=30", "sync-interval=150"],
                       shim={})
        h = k.connect()
        m.check(h, strict=True)
        h.shutdown()
        k.stop()
    # a clean stop: one tag per chunk written, no pool tag
    present = {m.chunk_of(b) for b in range(m.n) if m.durable[b] != ZERO}
    names = {t["name"] for t in env.tags("nbd/d/")}
    assert not [n for n in names if "/pool/" in n], f"pool tags after a clean stop: {names}"
    chunks = {int(n.rsplit("/", 1)[1]) for n in names}
    assert present <= chunks, f"chunks {sorted(present - chunks)} written but not tagged"
    env.stop_daemon()
    env.check_region()


def test_sync_after_restart(env):
    """Fresh chunks after pmemzerod restarted, and the fold that follows.

    The plugin's connection is dead when a FUA write (then a FLUSH) goes
    into a fresh chunk: the write needs no daemon (its journal record is
    its mapping) and succeeds; the fold at the clean stop reconnects and
    moves every chunk to its tag.  A sync point that is the first request
    to find the daemon gone must reconnect, not fail with EIO.
    """
    env.start_daemon()
    size = 16 * MIB
    k = env.nbdkit(size=str(size), extra=["reconnect-timeout=30", "sync-interval=0"])
    h = k.connect()
    h.pwrite(b"a" * BLOCK, 0)
    h.flush()
    wait_for(lambda: any("/pool/" in t["name"] for t in env.tags("nbd/d/")),
             "extents owned ahead", proc=k.proc, log=k.log)
    for i, how in enumerate(("fua", "flush")):
        env.kill_daemon()
        time.sleep(0.3)  # the client library's reader sees the connection close
        env.start_daemon()
        off = (i + 1) * env.extent
        data = bytes([0x41 + i]) * BLOCK
        if how == "fua":
            h.pwrite(data, off, nbd.CMD_FLAG_FUA)
        else:
            h.pwrite(data, off)
            h.flush()
        assert h.pread(BLOCK, off) == data, f"{how}: the block does not read back"
    h.shutdown()
    k.stop()
    chunks = {int(t["name"].rsplit("/", 1)[1]) for t in env.chunk_tags()}
    assert chunks == {0, 1, 2}, f"chunks tagged after the clean stop: {sorted(chunks)}"
    assert not env.tags("nbd/d/pool/"), "pool tags after a clean stop"
    env.stop_daemon()
    env.check_region()


def data_of(c):
    return bytes([c % 251 + 1]) * BLOCK


def test_journal_wrap(env):
    """A journal of 8 slots: it fills, folds, wraps, and refuses for a while
    (those chunks fall back); then kill -9 of nbdkit after a FLUSH: every
    chunk reads its data, under its tag or through the journal."""
    env.start_daemon()
    n = 48
    # made with a journal of 8 records; after the kill, the installed plugin reads 8 back
    k = env.nbdkit(size=str(n * env.extent), extra=["sync-interval=50"], journal_slots=8)
    h = k.connect()
    for c in range(n):
        h.pwrite(data_of(c), c * env.extent)
        if c % 5 == 4:
            time.sleep(0.06)  # a tick: the fold thread folds the full half
    h.flush()
    k.kill()
    k.start()
    h = k.connect()
    for c in range(n):
        assert h.pread(BLOCK, c * env.extent) == data_of(c), f"chunk {c} lost"
    h.shutdown()
    k.stop()
    with open(k.log) as f:
        log = f.read()
    assert "found the journal full" in log and "pmemz: fold: " in log, "no fold ran"
    chunks = {int(t["name"].rsplit("/", 1)[1]) for t in env.chunk_tags()}
    assert chunks == set(range(n)), f"chunks tagged: {sorted(chunks)}"
    assert not env.tags("nbd/d/pool/"), "pool tags after a clean stop"
    env.stop_daemon()
    env.check_region()


def test_journal_adopt(env):
    """Folds refused (as at the uid's tag limit): the chunks live in the
    journal across a clean stop and a start that cannot move them either,
    and reach their tags at the first start that can."""
    env.start_daemon()
    n = 6
    refuse = {"PMEMZ_SHIM_REFUSE_MOVES": "1"}
    k = env.nbdkit(size=str(16 * env.extent), shim=refuse)
    h = k.connect()
    for c in range(n):
        h.pwrite(data_of(c), c * env.extent)
    h.flush()
    h.shutdown()
    k.stop()
    assert not env.chunk_tags(), "a refused fold made tags"
    assert env.tags("nbd/d/pool/"), "the pools went with the journal's chunks in them"
    written, zeroed = n, set()
    for shim in (refuse, {}):
        k = env.nbdkit(size=str(16 * env.extent), shim=shim)
        h = k.connect()
        for c in range(n + 2):
            want = data_of(c) if c < written and c not in zeroed else bytes(BLOCK)
            assert h.pread(BLOCK, c * env.extent) == want, f"chunk {c}, {shim}"
        if shim:
            # refused folds: a TRIM leaves the chunk (advisory), a ZERO zeroes it in place
            h.trim(env.extent, 0)
            assert h.pread(BLOCK, 0) == data_of(0), "TRIM while folds are refused"
            h.zero(env.extent, env.extent)
            assert h.pread(BLOCK, env.extent) == bytes(BLOCK), "ZERO while folds are refused"
            zeroed.add(1)
        # a fresh chunk beside the journal's old ones: it reads back
        h.pwrite(data_of(n), n * env.extent)
        assert h.pread(BLOCK, n * env.extent) == data_of(n)
        written = n + 1
        h.shutdown()
        k.stop()
    chunks = {int(t["name"].rsplit("/", 1)[1]) for t in env.chunk_tags()}
    assert chunks == set(range(n + 1)), f"chunks tagged: {sorted(chunks)}"
    assert not env.tags("nbd/d/pool/"), "pool tags after a clean stop"
    env.stop_daemon()
    env.check_region()


def fnv_check(uuid, seq, chunk, extent):
    """pmemz_disk_jrec_check (common/disk/disk-format.c)."""
    return fnv(bytes(uuid) + b"".join(v.to_bytes(8, "little") for v in (seq, chunk, extent))) or 1


def superblock(env):
    """The disk's superblock extent in the region file: (its byte offset, its
    extent number, the journal's slots, the disk's uuid, the journal's base)."""
    run = next(t for t in env.tags("nbd/d") if t["name"] == "nbd/d")["runs"][0]
    sb_extent = int(run["first"] if isinstance(run, dict) else run[0] if isinstance(run, list)
                    else str(run).split("-")[0])
    sb = int(env.region_stat()["data_offset"]) + sb_extent * env.extent
    with open(env.image, "rb") as f:
        f.seek(sb)
        raw = f.read(SB_SIZE)
        f.seek(sb + 4096)
        base = int.from_bytes(f.read(8), "little")
    # version 2 records the journal's length; version 1's is as long as the extent holds
    slots = u64(raw, 128) if u32(raw, 8) == 2 else (env.extent - 8192) // 32
    return sb, sb_extent, slots, raw[32:48], base


SB_SIZE = 256  # struct pmemz_disk_super, version 2 (common/disk/disk-format.h)


def u32(b, off):
    return int.from_bytes(b[off:off + 4], "little")


def u64(b, off):
    return int.from_bytes(b[off:off + 8], "little")


def fnv(data, h=0xcbf29ce484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & (2**64 - 1)
    return h


def sb_checksum(raw):
    """pmemz_disk_super_checksum: version 1 over bytes [0, 88); version 2 over all
    256 bytes but the checksum (88) and the size (96)."""
    h = fnv(raw[:88])
    return h if u32(raw, 8) == 1 else fnv(raw[104:256], h)


def sb_rewrite(env, version=2, compat=0, ro_compat=0, incompat=0):
    """The superblock as another plugin wrote it: version 1 (bytes 104 on zero,
    128 bytes), or version 2 with these bits ORed into its masks."""
    sb = superblock(env)[0]
    with open(env.image, "r+b") as f:
        f.seek(sb)
        raw = bytearray(f.read(SB_SIZE))
        raw[8:12] = version.to_bytes(4, "little")
        if version == 1:
            raw[12:16] = (128).to_bytes(4, "little")
            raw[104:256] = bytes(152)
        for off, bits in ((104, compat), (112, ro_compat), (120, incompat)):
            raw[off:off + 8] = (u64(raw, off) | bits).to_bytes(8, "little")
        raw[88:96] = sb_checksum(raw).to_bytes(8, "little")
        f.seek(sb)
        f.write(raw)


def journal(env):
    """The journal as a restart would read it: (base, {chunk: extent} of the
    valid records, the latest per chunk)."""
    sb, _, slots, uuid, base = superblock(env)
    with open(env.image, "rb") as f:
        f.seek(sb + 8192)
        raw = f.read(slots * 32)
    latest = {}
    for slot in range(slots):
        seq, chunk, extent, check = (int.from_bytes(raw[slot * 32 + 8 * i:slot * 32 + 8 * i + 8],
                                                    "little") for i in range(4))
        if check != fnv_check(uuid, seq, chunk, extent) or seq < base or seq % slots != slot:
            continue
        if chunk not in latest or latest[chunk][0] < seq:
            latest[chunk] = (seq, extent)
    return base, {c: e for c, (_, e) in latest.items()}


def test_journal_partial(env):
    """Folds and recoveries that move some chunks and are refused the rest
    (the tag limit reached halfway): the moved chunks' records are spent at
    once, so that a TRIM of one, which gives its extent back, cannot map it
    again after a crash; the unmoved ones stay mapped by the journal across
    kill -9."""
    env.start_daemon()
    n = 6
    size = str(16 * env.extent)
    # requests of 2 moves at most, every other one refused
    partial = {"PMEMZ_SHIM_MOVES_MAX": "2", "PMEMZ_SHIM_REFUSE_MOVES_AFTER": "1"}

    def tagged():
        return {int(t["name"].rsplit("/", 1)[1]) for t in env.chunk_tags()}

    # a fold: a TRIM of a chunk in the journal folds first; 2 moved, the rest refused
    k = env.nbdkit(size=size, shim=partial, extra=["sync-interval=0"])
    h = k.connect()
    for c in range(n):
        h.pwrite(data_of(c), c * env.extent)
    h.flush()
    h.trim(env.extent, (n - 1) * env.extent)
    assert tagged() == {0, 1}, f"a partial fold moved {sorted(tagged())}"
    _, mapped = journal(env)
    assert set(mapped) == set(range(2, n)), f"after a partial fold the journal maps {mapped}"
    h.trim(env.extent, 0)  # chunk 0's extent goes back to the daemon
    assert tagged() == {1}, f"after chunk 0's TRIM, chunks tagged: {sorted(tagged())}"
    k.kill()
    # a recovery: 2 of the journal's 4 chunks moved, the other 2 adopted
    k = env.nbdkit(size=size, shim=partial, extra=["sync-interval=0"])
    h = k.connect()
    assert tagged() == {1, 2, 3}, f"a partial recovery moved {sorted(tagged())}"
    _, mapped = journal(env)
    assert set(mapped) == {4, 5}, f"after a partial recovery the journal maps {mapped}"
    h.trim(env.extent, 2 * env.extent)
    assert tagged() == {1, 3}, f"after chunk 2's TRIM, chunks tagged: {sorted(tagged())}"
    k.kill()
    # a start that can move them all
    k = env.nbdkit(size=size)
    h = k.connect()
    for c in range(n + 2):
        got = h.pread(BLOCK, c * env.extent)
        if c in (0, 2) or c >= n:
            assert got == bytes(BLOCK), f"chunk {c} is not zero"
        else:
            # chunk n-1's TRIM was refused (advisory): its data, or zeros
            assert got == data_of(c) or (c == n - 1 and got == bytes(BLOCK)), f"chunk {c}"
    h.shutdown()
    k.stop()
    assert {1, 3, 4} <= tagged() and not {0, 2} & tagged(), f"chunks tagged: {sorted(tagged())}"
    assert not env.tags("nbd/d/pool/"), "pool tags after a clean stop"
    env.stop_daemon()
    env.check_region()


def test_journal_hostile(env):
    """A tenant writes its own journal: records that name an extent outside
    its pools (its superblock's, one past the region), a chunk past the
    disk's size, a wrong check.  The next start ignores them all: the
    written chunks read their data, the others zeros; check stays clean."""
    env.start_daemon()
    k = env.nbdkit(size=str(16 * env.extent), extra=["sync-interval=0"])
    h = k.connect()
    for c in range(2):
        h.pwrite(data_of(c), c * env.extent)
    h.flush()
    k.kill()  # the journal maps chunks 0 and 1, their pool is still there
    assert env.tags("nbd/d/pool/"), "no pool tag to recover"
    sb, sb_extent, slots, uuid, base = superblock(env)
    with open(env.image, "r+b") as f:
        seq = base + 100
        forged = [(5, sb_extent, True), (6, 1 << 40, True), (1 << 40, sb_extent, True),
                  (7, sb_extent, False)]
        for chunk, extent, good in forged:
            check = fnv_check(uuid, seq, chunk, extent) ^ (0 if good else 1)
            f.seek(sb + 8192 + (seq % slots) * 32)
            f.write(b"".join(v.to_bytes(8, "little") for v in (seq, chunk, extent, check)))
            seq += 1
    k.start()
    h = k.connect()
    for c in range(8):
        want = data_of(c) if c < 2 else bytes(BLOCK)
        assert h.pread(BLOCK, c * env.extent) == want, f"chunk {c}"
    h.shutdown()
    k.stop()
    chunks = {int(t["name"].rsplit("/", 1)[1]) for t in env.chunk_tags()}
    assert chunks == {0, 1}, f"chunks tagged: {sorted(chunks)}"
    assert not env.tags("nbd/d/pool/"), "pool tags after a clean stop"
    env.stop_daemon()
    env.check_region()


def test_no_journal(env):
    """Extents too small for a journal (8 KiB): no extents owned ahead, every
    fresh chunk committed on its own; nothing else changes."""
    env.start_daemon()
    k = env.nbdkit(size=str(64 * env.extent))
    h = k.connect()
    for c in range(8):
        h.pwrite(data_of(c), c * env.extent)
    h.flush()
    for c in range(8):
        assert h.pread(BLOCK, c * env.extent) == data_of(c), f"chunk {c}"
    h.shutdown()
    k.stop()
    with open(k.log) as f:
        assert "hold no journal" in f.read()
    assert not env.tags("nbd/d/pool/"), "pool tags without a journal"
    assert len(env.chunk_tags()) == 8
    env.stop_daemon()
    env.check_region()


def journal_disk(env, n=4):
    """A disk of 16 chunks whose chunks 0..n-1 the journal maps (nbdkit killed
    after a FLUSH: no fold moved them), its pool tags still there."""
    k = env.nbdkit(size=str(16 * env.extent), extra=["sync-interval=0"])
    h = k.connect()
    for c in range(n):
        h.pwrite(data_of(c), c * env.extent)
    h.flush()
    k.kill()
    env.nbdkits.remove(k)
    assert set(journal(env)[1]) == set(range(n)), f"the journal maps {journal(env)[1]}"
    assert env.tags("nbd/d/pool/"), "no pool tag"


def disk_state(env):
    """What a plugin may write: the superblock's extent (journal included) and every tag."""
    sb = superblock(env)[0]
    with open(env.image, "rb") as f:
        f.seek(sb)
        ext = f.read(env.extent)
    tags = sorted((t["name"], json.dumps(t["runs"], sort_keys=True)) for t in env.tags("nbd/"))
    return ext, tags


def expect_data(k, n, written):
    """Chunks 0..n-1 read their data when in written, else zeros."""
    h = k.connect()
    for c in range(n):
        want = data_of(c) if c in written else bytes(BLOCK)
        assert h.pread(BLOCK, c * k.env.extent) == want, f"chunk {c}"
    return h


def test_superblock_v1(env):
    """A version 1 superblock (everything db6afef writes: no masks, the journal
    as long as its extent holds) whose journal maps chunks: it opens as the
    features it had, every chunk reads back, the journal's chunks are folded
    into their tags, and the superblock stays version 1."""
    env.start_daemon()
    journal_disk(env)
    sb_rewrite(env, version=1)
    k = env.nbdkit()
    h = expect_data(k, 6, set(range(4)))
    h.pwrite(data_of(5), 5 * env.extent)  # a fresh chunk, through the journal again
    h.flush()
    h.shutdown()
    k.stop()
    chunks = {int(t["name"].rsplit("/", 1)[1]) for t in env.chunk_tags()}
    assert chunks == {0, 1, 2, 3, 5}, f"chunks tagged: {sorted(chunks)}"
    assert not env.tags("nbd/d/pool/"), "pool tags after a clean stop"
    sb = superblock(env)[0]
    with open(env.image, "rb") as f:
        f.seek(sb)
        raw = f.read(SB_SIZE)
    assert u32(raw, 8) == 1 and u64(raw, 88) == sb_checksum(raw), "the superblock changed version"
    env.stop_daemon()
    env.check_region()


def test_features_incompat(env):
    """An incompat feature this plugin does not know: the disk is refused, the
    message names the bit, and nothing is written (superblock, journal, tags:
    no fold, no pool freed); without the bit it opens with every chunk."""
    env.start_daemon()
    journal_disk(env)
    sb_rewrite(env, incompat=1 << 9)
    before = disk_state(env)
    for size in (None, str(32 * env.extent)):  # size= would grow it: refused all the same
        k = env.nbdkit(size=size, wait=False, name="later")
        rc, log = k.expect_exit()
        env.nbdkits.remove(k)
        assert rc != 0, "a disk with an unknown incompat feature was served"
        assert "incompat features 0x0000000000000200 (bit 9)" in log, log[-1500:]
        assert "nothing was written" in log and "damaged" not in log, log[-1500:]
        assert disk_state(env) == before, "the refused disk was written"
    sb = superblock(env)[0]
    with open(env.image, "r+b") as f:  # the bit cleared again: as it was
        f.seek(sb)
        raw = bytearray(f.read(SB_SIZE))
        raw[120:128] = (u64(raw, 120) & ~(1 << 9)).to_bytes(8, "little")
        raw[88:96] = sb_checksum(raw).to_bytes(8, "little")
        f.seek(sb)
        f.write(raw)
    k = env.nbdkit()
    expect_data(k, 6, set(range(4))).shutdown()
    k.stop()
    env.stop_daemon()
    env.check_region()


def test_features_ro_compat(env):
    """A ro_compat feature this plugin does not know: the disk is served
    read-only (the journal's chunks read where it maps them), nothing is
    written (no fold, no free, no journal record, no size change)."""
    env.start_daemon()
    journal_disk(env)
    sb_rewrite(env, ro_compat=1 << 3)
    before = disk_state(env)
    k = env.nbdkit(size=str(32 * env.extent), wait=False, name="grow")
    rc, log = k.expect_exit()
    env.nbdkits.remove(k)
    assert rc != 0 and "read-only" in log, log[-1500:]
    assert disk_state(env) == before, "a refused size= was written"
    k = env.nbdkit()
    h = expect_data(k, 6, set(range(4)))
    assert h.is_read_only(), "a disk with an unknown ro_compat feature is writable"
    assert not h.can_trim() and not h.can_zero()
    try:
        h.pwrite(data_of(9), 5 * env.extent)
        raise AssertionError("a write into a read-only disk succeeded")
    except nbd.Error:
        pass
    h.shutdown()
    k.stop()
    log = read_log(k)
    assert "ro_compat features 0x0000000000000008 (bit 3)" in log and "served read-only" in log, \
        log[-1500:]
    assert disk_state(env) == before, "the read-only disk was written"
    env.stop_daemon()
    env.check_region()


def test_features_compat(env):
    """A compat feature this plugin does not know: served as usual (written,
    grown, folded), and the bit stays in the superblock."""
    env.start_daemon()
    journal_disk(env)
    sb_rewrite(env, compat=1 << 5)
    k = env.nbdkit(size=str(32 * env.extent))
    h = expect_data(k, 6, set(range(4)))
    assert not h.is_read_only() and h.get_size() == 32 * env.extent
    h.pwrite(data_of(20), 20 * env.extent)
    h.flush()
    h.shutdown()
    k.stop()
    sb = superblock(env)[0]
    with open(env.image, "rb") as f:
        f.seek(sb)
        raw = f.read(SB_SIZE)
    assert u64(raw, 104) == 1 << 5 and u64(raw, 88) == sb_checksum(raw), "the compat bit went"
    assert u64(raw, 96) == 32 * env.extent, "the size did not grow"
    chunks = {int(t["name"].rsplit("/", 1)[1]) for t in env.chunk_tags()}
    assert chunks == {0, 1, 2, 3, 20}, f"chunks tagged: {sorted(chunks)}"
    env.stop_daemon()
    env.check_region()


def read_log(k):
    with open(k.log, errors="replace") as f:
        return f.read()


TESTS = {"loop": (test_loop, {"region_size": "96M", "extent": "1M"}),
         "sync-after-restart": (test_sync_after_restart, {"region_size": "64M", "extent": "1M"}),
         "journal-wrap": (test_journal_wrap, {"region_size": "128M", "extent": "1M"}),
         "journal-adopt": (test_journal_adopt, {"region_size": "64M", "extent": "1M"}),
         "journal-partial": (test_journal_partial, {"region_size": "64M", "extent": "1M"}),
         "no-journal": (test_no_journal, {"region_size": "16M", "extent": "8K"}),
         "journal-hostile": (test_journal_hostile, {"region_size": "64M", "extent": "1M"}),
         "superblock-v1": (test_superblock_v1, {"region_size": "64M", "extent": "1M"}),
         "features-incompat": (test_features_incompat, {"region_size": "64M", "extent": "1M"}),
         "features-ro-compat": (test_features_ro_compat, {"region_size": "64M", "extent": "1M"}),
         "features-compat": (test_features_compat, {"region_size": "64M", "extent": "1M"})}

if __name__ == "__main__":
    sys.exit(run(TESTS, sys.argv))
