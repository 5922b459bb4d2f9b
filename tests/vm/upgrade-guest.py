#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The client side of the package upgrade test (tests/vm/workload-upgrade.sh),
run in the guest with the host's python3 against the INSTALLED
libpmemzclient and the disk the pmemzerod-nbd@ service serves.  It uses
tests/compat/compatlib.py and workloads.py, copied to /vmtest/compat.

  upgrade-guest.py tags-write LIB SOCK REGION LABEL OUT
      commit LABEL-a (3 extents) and LABEL-b (1) of known content; OUT: what
      a reader must find
  upgrade-guest.py tags-check LIB SOCK REGION IN
      every tag of IN read through the library: the same bytes
  upgrade-guest.py disk-write NBDSOCK NAME CHUNK OUT
      the compat tests' writes, a ZERO and a FLUSH on the disk; OUT: every
      non-zero block's digest and the chunks never written
  upgrade-guest.py disk-check NBDSOCK IN
      every block and hole of IN
  upgrade-guest.py nbd-ready NBDSOCK
      wait (60 s at most) until an NBD server answers on NBDSOCK
  upgrade-guest.py holder LIB SOCK REGION DIR
      a client holding leases across the daemon's restart (below)
  upgrade-guest.py header-version PATH
      the layout version in a region's header
  upgrade-guest.py metadata-size CTL PATH
      the bytes of the region's header and tables: its data offset, as this
      pmemzctl check finds it
  upgrade-guest.py hash-prefix PATH LEN
      sha256 of the first LEN bytes
  upgrade-guest.py super-version CTL SOCK REGION DISK
      the version in a disk's superblock

The holder: connects, keeps a reserve of 2 extents
(pmemz_region_set_reserve), commits held-commit, leases one extent more
and writes it without committing, prints "holding" and waits for DIR/go.
Then, the daemon having restarted under it: the next call on the old
connection fails (ECONNRESET or ENOTCONN), pmemz_client_reconnect succeeds
once the daemon is back, the uncommitted lease is stale (ESTALE: the daemon
released it), held-commit reads back as written, and it prints
"reconnected"; it waits for DIR/stop (meanwhile the reserve leases again,
which the workload sees in `pmemzctl clients`), then commits after-restart
and exits 0.  Every observation is a line on stdout.
"""
import errno
import json
import mmap
import os
import stat
import struct
import subprocess
import sys
import time

sys.path.insert(0, "/vmtest/compat")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compat"))

from compatlib import Client, ClientError, Lib, nbd, sha256  # noqa: E402
from workloads import apply_disk_ops, disk_blocks_ok, pattern  # noqa: E402


def say(msg):
    print(msg, flush=True)


def tags_write(lib, sock, region, label, out):
    c = Client(Lib(lib), sock)
    r = c.region(region)
    tags = []
    for suffix, n in (("a", 3), ("b", 1)):
        a = r.alloc(n)
        content = pattern(f"{label}-{suffix}")
        a.write(content)
        a.commit(f"{label}-{suffix}")
        tags.append({"name": f"{label}-{suffix}", "extents": n, "sha256": sha256(a.read())})
        a.close()
    c.close()
    with open(out, "w") as f:
        json.dump(tags, f)
    say(f"committed {', '.join(t['name'] for t in tags)} in {region}")


def tags_check(lib, sock, region, path):
    with open(path) as f:
        tags = json.load(f)
    c = Client(Lib(lib), sock)
    r = c.region(region)
    for t in tags:
        a = r.open(t["name"])
        if sha256(a.read()) != t["sha256"]:
            raise SystemExit(f"tag {t['name']} of {region}: other bytes than were committed")
        a.close()
    c.close()
    say(f"{len(tags)} tags of {region} intact ({', '.join(t['name'] for t in tags)})")


def nbd_connect(sock):
    h = nbd.NBD()
    h.add_meta_context("base:allocation")
    h.connect_unix(sock)
    return h


def disk_write(sock, name, chunk, out):
    h = nbd_connect(sock)
    size = h.get_size()
    expect = apply_disk_ops(h, name, chunk, size)
    h.shutdown()
    with open(out, "w") as f:
        json.dump(expect, f)
    say(f"disk {name}: written and flushed ({size} bytes, chunks of {chunk})")


def disk_check(sock, path):
    with open(path) as f:
        expect = json.load(f)
    h = nbd_connect(sock)
    n_blocks, n_holes = disk_blocks_ok(h, expect, "the pmemzerod-nbd@ service")
    h.shutdown()
    say(f"disk {expect['name']}: {n_blocks} data blocks and {n_holes} hole chunks as written")


def nbd_ready(sock):
    deadline = time.monotonic() + 60
    while True:
        try:
            nbd_connect(sock).shutdown()
            return
        except nbd.Error as e:
            if time.monotonic() > deadline:
                raise SystemExit(f"no NBD server on {sock} within 60 s: {e}")
            time.sleep(0.2)


def wait_file(path, timeout=600):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"holder: {path} did not appear")
        time.sleep(0.2)


def holder(lib, sock, region, d):
    c = Client(Lib(lib), sock)
    r = c.region(region)
    r.set_reserve(2)
    a = r.alloc(1)
    content = pattern("held-commit")
    a.write(content)
    a.commit("held-commit")
    digest = sha256(a.read())
    a.close()
    lease = r.alloc(1)
    lease.write(pattern("never-committed"))
    say("holding: a reserve of 2 extents, held-commit committed, 1 extent leased and written")
    wait_file(os.path.join(d, "go"))
    try:
        lease.commit("never-committed")
        raise SystemExit("the lease of the old connection committed after the restart")
    except ClientError as e:
        say(f"first call after the restart: {e}")
        if e.errno not in (errno.ECONNRESET, errno.ENOTCONN, errno.EPIPE):
            raise SystemExit(f"expected a broken connection, got {e}")
    deadline = time.monotonic() + 120
    while (rc := c.reconnect()) != 0:
        if time.monotonic() > deadline:
            raise SystemExit(f"pmemz_client_reconnect: {rc} for 120 s")
        time.sleep(0.5)
    say("pmemz_client_reconnect: 0")
    try:
        lease.commit("never-committed")
        raise SystemExit("the lease of the old connection committed after the reconnect")
    except ClientError as e:
        say(f"the uncommitted lease after the reconnect: {e}")
        if e.errno != errno.ESTALE:
            raise SystemExit(f"expected ESTALE, got {e}")
    lease.close()
    a = r.open("held-commit")
    if sha256(a.read()) != digest:
        raise SystemExit("held-commit: other bytes after the restart")
    a.close()
    say("held-commit: every byte as committed")
    say("reconnected")
    wait_file(os.path.join(d, "stop"))
    a = r.alloc(1)
    a.write(pattern("after-restart"))
    a.commit("after-restart")
    a.close()
    say("after-restart: leased and committed on the new connection")
    c.close()


def read_bytes(path, off, n):
    """n bytes at off of a file, or of a device-DAX device (which only maps)."""
    st = os.stat(path)
    with open(path, "rb") as f:
        if not stat.S_ISCHR(st.st_mode):
            f.seek(off)
            return f.read(n)
        try:
            with open(f"/sys/dev/char/{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}/align") as a:
                align = int(a.read())
        except OSError:
            align = 2 << 20
        start = off - off % align
        end = -(-(off + n) // align) * align
        m = mmap.mmap(f.fileno(), end - start, mmap.MAP_SHARED, mmap.PROT_READ, offset=start)
        try:
            return m[off - start:off - start + n]
        finally:
            m.close()


def header_version(path):
    return struct.unpack_from("<I", read_bytes(path, 0, 12), 8)[0]


def metadata_size(ctl, path):
    rep = json.loads(subprocess.run([ctl, "--json", "check", "--no-data", path],
                                    capture_output=True, text=True).stdout)
    return rep["data_offset"]


def hash_prefix(path, n):
    return sha256(read_bytes(path, 0, int(n)))


def super_version(ctl, sock, region, disk):
    def js(*args):
        return json.loads(subprocess.run([ctl, "--socket", sock, "--json", *args], check=True,
                                         capture_output=True, text=True).stdout)
    reg = next(r for r in js("regions")["regions"] if r["name"] == region)
    out = js("tags", region, "--all")
    tags = out if isinstance(out, list) else out["tags"]
    t = next(t for t in tags if t["name"] == f"nbd/{disk}")
    off = reg["data_offset"] + t["runs"][0]["first"] * reg["extent_size"]
    return struct.unpack_from("<I", read_bytes(reg["path"], off, 12), 8)[0]


def main(argv):
    cmds = {
        "tags-write": (tags_write, 5), "tags-check": (tags_check, 4),
        "disk-write": (lambda s, n, c, o: disk_write(s, n, int(c), o), 4),
        "disk-check": (disk_check, 2), "nbd-ready": (nbd_ready, 1), "holder": (holder, 4),
        "header-version": (lambda p: say(header_version(p)), 1),
        "metadata-size": (lambda c, p: say(metadata_size(c, p)), 2),
        "hash-prefix": (lambda p, n: say(hash_prefix(p, n)), 2),
        "super-version": (lambda *a: say(super_version(*a)), 4),
    }
    if len(argv) < 2 or argv[1] not in cmds or len(argv) - 2 != cmds[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    cmds[argv[1]][0](*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
