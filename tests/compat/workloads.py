# SPDX-License-Identifier: MIT
"""What the compatibility tests write with one build and check with another
(tests/compat): regions with committed tags of known content, a finished
MOVE, a freed tag and leases in flight; disks with data, holes, chunks
given back, journal records not yet folded and pool tags.  The writers
return what a reader must find; the checkers compare a build's view with
it.  Used by make-images (the golden images), test-golden.py and
check-format-compatible.

Run as a program, it is the second tenant of a region workload:
    workloads.py tenant LIB SOCKET REGION LABEL COMMIT HOLD
commits a tag of COMMIT extents and leases HOLD more, prints what it did
as one JSON line, and holds the leases until its stdin closes.
"""
import json
import os
import subprocess
import sys

from compatlib import (BLOCK, MIB, NOBODY, Client, Lib, Nbdkit, disk_blocks, holes, log, sha256,
                       tag_view, wait_for)

DISK_SIZE = 2 * MIB


def pattern(label):
    """Content of known bytes: each 4 KiB block names the label and its offset."""
    def content(off, n):
        out = bytearray()
        for k in range(0, n, BLOCK):
            line = f"{label} @{off + k:#x}\n".encode()
            out += (line * (BLOCK // len(line) + 1))[:BLOCK]
        return bytes(out[:n])
    return content


def _digest(content, offsets, extent):
    return sha256(b"".join(content(off, extent) for off in sorted(offsets)))


def _commit(region, tag, extents, label, expect, uid):
    a = region.alloc(extents)
    content = pattern(f"{label}/{tag}")
    a.write(content)
    a.commit(tag)
    offs = a.extent_offsets()
    expect.append({"name": tag, "uid": uid, "extents": extents,
                   "sha256": _digest(content, offs, region.extent)})
    return a, content, offs


def _hold(region, extents, label):
    a = region.alloc(extents)
    a.write(pattern(f"{label}/lease"))
    return a


def _tenant(argv):
    """The second tenant: one committed tag, leases held until stdin closes."""
    lib, sock, name, label, n_commit, n_hold = argv
    c = Client(Lib(lib), sock)
    r = c.region(name)
    expect = []
    _commit(r, f"tenant-{os.getuid()}", int(n_commit), label, expect, os.getuid())
    held = _hold(r, int(n_hold), label) if int(n_hold) else None
    print(json.dumps({"tags": expect, "held": int(n_hold)}), flush=True)
    sys.stdin.read()
    if held:
        held.close()
    c.close()
    return 0


def _tenant_python():
    """An interpreter the second tenant's uid can run: root's own may live
    in root's home (a pyenv), which uid 65534 cannot enter."""
    if os.access(os.path.dirname(sys.executable), os.X_OK) and \
            not sys.executable.startswith(os.path.expanduser("~") + os.sep):
        return sys.executable
    return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def write_region(daemon, lib, name, label, hold=True):
    """On daemon's region name, through lib (a build's libpmemzclient):
    tags alpha (3 extents), beta (1), gamma (5); pool (4) whose first 2
    extents one MOVE request took to moved-0 and moved-1; freed (2),
    committed then released; as root, a second tenant (uid 65534) with a tag
    of 2 extents.  With hold, leases in flight when this returns: 3 extents
    leased and written, a reserve of 2, the second tenant's 2; the caller
    then kills the daemon (SIGKILL) and calls the returned release().
    Returns (expected tags, leases in flight, release)."""
    c = Client(lib, daemon.sock)
    r = c.region(name)
    uid = os.getuid()
    expect = []
    for tag, n in (("alpha", 3), ("beta", 1), ("gamma", 5)):
        _commit(r, tag, n, label, expect, uid)[0].close()
    pool, content, offs = _commit(r, "pool", 4, label, expect, uid)
    expect.pop()
    r.move(pool, ["moved-0", "moved-1"])
    for k, off in enumerate(offs[:2]):
        expect.append({"name": f"moved-{k}", "uid": uid, "extents": 1,
                       "sha256": _digest(content, [off], r.extent)})
    expect.append({"name": "pool", "uid": uid, "extents": 2,
                   "sha256": _digest(content, offs[2:], r.extent)})
    pool.close()
    _commit(r, "freed", 2, label, [], uid)[0].release()
    tenant = None
    held = 0
    if os.getuid() == 0 and NOBODY in daemon.regions[name].allow_users:
        tenant = subprocess.Popen([_tenant_python(), os.path.abspath(__file__), "tenant",
                                   lib.path, daemon.sock, name, label, "2", "2" if hold else "0"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  user=NOBODY, group=NOBODY, extra_groups=[])
        line = tenant.stdout.readline()
        if not line:
            raise AssertionError(f"the second tenant failed (status {tenant.wait()})")
        got = json.loads(line)
        expect += got["tags"]
        held += got["held"]
    leases = []
    if hold:
        r.set_reserve(2)
        leases.append(_hold(r, 3, label))
        held += 3 + 2
        wait_for(lambda: daemon.region_stat(name)["leased"] == held, "the leases in flight",
                 proc=daemon.proc, log=daemon.log)

    def release():
        if tenant:
            tenant.stdin.close()
            tenant.wait(timeout=60)
        for a in leases:
            a.close()
        c.close()
    return sorted(expect, key=lambda t: (t["name"], t["uid"])), held, release


def check_tags(view, expect, what):
    """view (tag_view) against expected tags: name, uid, extents, digest, runs if given."""
    got = {(t["name"], t["uid"]): t for t in view}
    want = {(t["name"], t["uid"]): t for t in expect}
    problems = []
    for k in sorted(set(got) | set(want)):
        if k not in got:
            problems.append(f"tag {k[0]!r} of uid {k[1]} is missing")
        elif k not in want:
            problems.append(f"tag {k[0]!r} of uid {k[1]} was never written")
        else:
            for field in ("extents", "sha256", "runs"):
                if field in want[k] and got[k][field] != want[k][field]:
                    problems.append(f"tag {k[0]!r} of uid {k[1]}: {field} {got[k][field]} "
                                    f"instead of {want[k][field]}")
    if problems:
        raise AssertionError(f"{what}:\n  " + "\n  ".join(problems))


def check_region(daemon, name, expect, lib=None):
    """daemon serves region name online, with exactly the expected tags and
    bytes (read from the file with the daemon's runs; with lib, the caller's
    own tags again through the library's mapping), and nothing leased."""
    stat = daemon.region_stat(name)
    if stat["state"] != "online":
        raise AssertionError(f"{daemon.build.name} serves region {name!r} {stat['state']}: "
                             f"{stat.get('failure')}")
    check_tags(tag_view(daemon, name), expect, f"{daemon.build.name} pmemzerod, region {name!r}")
    if stat["leased"] != 0:
        raise AssertionError(f"{stat['leased']} extents LEASED after the start")
    if lib is not None:
        c = Client(lib, daemon.sock)
        r = c.region(name)
        for t in expect:
            if t["uid"] == os.getuid():
                a = r.open(t["name"])
                if sha256(a.read()) != t["sha256"]:
                    raise AssertionError(f"tag {t['name']!r} read through libpmemzclient: "
                                         "other bytes")
                a.close()
        c.close()
    return stat


# ---- disks ----

DISKS = {
    # name: (plugin parameters, how nbdkit ends)
    "folded": ((), "stop"),  # extents owned ahead, journal folded into chunk tags at exit
    "journal": (("sync-interval=3600000",), "kill"),  # records not folded, pool tags kept
    "plain": (("ahead=0",), "stop"),  # every fresh chunk committed as its tag
}


def disk_ops(chunk, size):
    """The writes and the ZERO of a whole chunk every disk gets, in order."""
    # The ZERO first: the plugin folds the journal before it gives a chunk
    # back, and the fresh chunks after it are to stay in the journal.
    return [("write", 5 * chunk, 3 * chunk, "gen1"), ("zero", 6 * chunk, chunk, None),
            ("write", 0, 2 * chunk, "gen1"), ("write", 3 * chunk + 8192, 4096, "gen1"),
            ("write", 10 * chunk - 2048, 4096, "gen1"), ("write", size - 4096, 4096, "gen1"),
            ("write", 0, 16384, "gen2")]


def disk_expect(chunk, size, disk):
    """What a reader must find: every non-zero 4 KiB block's digest, and the
    chunks never written (holes)."""
    model = bytearray(size)
    touched = set()
    for op, off, n, gen in disk_ops(chunk, size):
        model[off:off + n] = pattern(f"{disk}/{gen}")(off, n) if op == "write" else bytes(n)
        touched.update(range(off // chunk, (off + n - 1) // chunk + 1))
    blocks = {}
    for k in range(0, size, BLOCK):
        b = bytes(model[k:k + BLOCK])
        if any(b):
            blocks[str(k // BLOCK)] = sha256(b)
    return {"name": disk, "size": size, "chunk_size": chunk, "blocks": blocks,
            "holes": sorted(set(range((size + chunk - 1) // chunk)) - touched)}


def apply_disk_ops(h, disk, chunk, size):
    """disk_ops() on the NBD connection h, then a FLUSH; returns disk_expect()."""
    for op, off, n, gen in disk_ops(chunk, size):
        if op == "write":
            h.pwrite(pattern(f"{disk}/{gen}")(off, n), off)
        else:
            h.zero(n, off)
    h.flush()
    return disk_expect(chunk, size, disk)


def write_disk(build, daemon, region, disk, chunk, kind=None, size=DISK_SIZE):
    """A disk written as DISKS[kind] (default: the disk's name) says, through
    build's plugin: its writes, a FLUSH, then nbdkit stopped (SIGTERM) or
    killed (SIGKILL).  Returns disk_expect()."""
    params, end = DISKS[kind or disk]
    n = Nbdkit(build, daemon, region, disk, size=size, params=params)
    n.start()
    h = n.connect()
    expect = apply_disk_ops(h, disk, chunk, size)
    if end == "kill":
        n.kill()
    else:
        h.shutdown()
        n.stop()
    return expect


def disk_blocks_ok(h, expect, what):
    """Every 4 KiB block and every hole of expect on the NBD connection h:
    returns (data blocks, hole chunks)."""
    size = h.get_size()
    if size != expect["size"]:
        raise AssertionError(f"{what}, disk {expect['name']!r}: {size} bytes, not "
                             f"{expect['size']}")
    got = disk_blocks(h, size)
    bad = sorted((k for k in set(got) | set(expect["blocks"])
                  if got.get(k) != expect["blocks"].get(k)), key=int)
    if bad:
        raise AssertionError(f"{what}, disk {expect['name']!r}: 4 KiB blocks {bad[:20]} "
                             f"differ ({len(bad)} in all)")
    hs = set(holes(h, size, expect["chunk_size"]))
    missing = sorted(set(expect["holes"]) - hs)
    if missing:
        raise AssertionError(f"{what}, disk {expect['name']!r}: chunks {missing} never "
                             "written but not reported as holes")
    return len(got), len(hs)


def read_disk(build, daemon, region, expect):
    """Serve the disk with build's plugin and compare every block and the holes."""
    n = Nbdkit(build, daemon, region, expect["name"])
    n.start()
    try:
        h = n.connect()
        n_blocks, n_holes = disk_blocks_ok(h, expect, f"{build.name} plugin")
        h.shutdown()
    except BaseException:
        n.kill()
        raise
    n.stop()
    log(f"{build.name} plugin read disk {expect['name']!r}: {n_blocks} data blocks, "
        f"{n_holes} hole chunks")


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "tenant":
        sys.exit(_tenant(sys.argv[2:]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
