#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test-golden.py MANIFEST: a golden image, written by an older commit
(tests/compat/make-images), opened with the current build.

The image is decompressed into a private directory; then:
  1. `pmemzctl check` as found: the same verdict and extent counts as the
     commit that wrote it found;
  2. pmemzerod serves it: the region online, its uuid and geometry, every
     tag with its uid, its extents and the digest of every committed byte,
     as that commit's daemon served it after its own recovery; nothing
     LEASED, the leases in flight back among the free extents, BAD extents
     still BAD, a MOVE batch in flight resolved as that commit resolved it;
     the caller's own tags read again through libpmemzclient;
  3. every disk served by nbdkit-pmemz-plugin: every 4 KiB block as
     written and flushed, the chunks never written as holes;
  4. `pmemzctl check --recovered` after the daemon stopped: clean.

Environment (tests/compat/compat.cmake): PMEMZ_DAEMON, PMEMZ_CTL,
PMEMZ_CLIENT_LIB and PMEMZ_PLUGIN; the last two may be empty (a sanitizer
build's cannot be loaded into python3 or Debian's nbdkit): the tags are
then not read again through the library, the disks are skipped.
PMEMZ_ITEST_KEEP=1 keeps the directory.
Exit 0 pass, 1 fail, 77 skip (a disk image without the plugin, nbdkit or
python3-libnbd, or not run as root: the disks belong to uid 0).
"""
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from compatlib import (Build, Daemon, Lib, RegionSpec, decompress, log, nbd,  # noqa: E402
                       skip, workdir)
from workloads import check_region, read_disk  # noqa: E402

COUNTS = ("zeroed", "dirty", "leased", "committed", "bad")


def extents_of(runs):
    return sorted(e for r in runs for e in range(r["first"], r["first"] + r["count"]))


def current_build():
    plugin = os.environ.get("PMEMZ_PLUGIN") or None
    return Build("current", os.environ["PMEMZ_DAEMON"], os.environ["PMEMZ_CTL"],
                 os.environ.get("PMEMZ_CLIENT_LIB") or None, plugin)


def check_as_found(cur, m, spec):
    rc, rep, text = cur.check(spec.path, spec.metadata)
    want = m["as_found"]
    if rep is None or rc != want["status"]:
        raise AssertionError(f"pmemzctl check as found: status {rc}, {m['commit'][:7]} said "
                             f"{want['status']}\n{text}")
    got = {k: rep[k] for k in COUNTS + ("valid_tags",)}
    if got != {k: want[k] for k in got}:
        raise AssertionError(f"pmemzctl check as found: {got}, {m['commit'][:7]} found "
                             f"{ {k: want[k] for k in got} }")
    log(f"check as found: status {rc}, {got}")


def check_served(cur, d, m):
    stat = check_region(d, "r", m["served"]["tags"], Lib(cur.lib) if cur.lib else None)
    for k, v in m["region"].items():
        field = {"region_size": "size", "extent_count": "extents"}.get(k, k)
        if stat[field] != v:
            raise AssertionError(f"region {field}: {stat[field]}, the image says {v}")
    s = m["served"]
    got = {"committed": stat["committed"], "bad": stat["bad"],
           "free": stat["zeroed"] + stat["dirty"]}
    if got != {k: s[k] for k in got}:
        raise AssertionError(f"extent counts {got}, {m['commit'][:7]} served "
                             f"{ {k: s[k] for k in got} }")
    log(f"served: {len(s['tags'])} tags, every committed byte as written; {got}")
    return d.json("map", "r")["runs"]


def check_expect(m, runs):
    """What each image is there for, said once more in its own terms."""
    e = m["expect"]
    free = set(extents_of(runs["zeroed"]) + extents_of(runs["zeroing"])
               + extents_of(runs["dirty"]))
    names = {t["name"] for t in m["served"]["tags"]}
    if "leased_extents" in e:
        if extents_of(runs["leased"]) or not set(e["leased_extents"]) <= free:
            raise AssertionError(f"the leases in flight {e['leased_extents']} did not all come "
                                 f"back free: {runs}")
        log(f"{len(e['leased_extents'])} extents leased in flight came back free")
    if "bad_extents" in e:
        if extents_of(runs["bad"]) != e["bad_extents"]:
            raise AssertionError(f"BAD extents {extents_of(runs['bad'])}, written "
                                 f"{e['bad_extents']}")
        log(f"extents {e['bad_extents']} stayed BAD")
    if "move" in e:
        mv = e["move"]
        present = set(mv["members"]) & names
        if present != (set(mv["members"]) if mv["resolves"] == "forward" else set()):
            raise AssertionError(f"MOVE batch: members {sorted(present)} present, the batch "
                                 f"resolves {mv['resolves']}")
        log(f"the MOVE batch in flight resolved {mv['resolves']}")


def check_disks(cur, d, m):
    """Every disk through the plugin; None, or why the disks cannot be checked here."""
    if nbd is None or shutil.which("nbdkit") is None:
        return "nbdkit or python3-libnbd is not installed: the disks are NOT checked"
    if not cur.plugin:
        return ("no nbdkit-pmemz-plugin nbdkit can load (not built, or a sanitizer build's): "
                "the disks are NOT checked")
    owners = {t["uid"] for t in m["served"]["tags"] if t["name"].startswith("nbd/")}
    if owners != {os.getuid()}:
        return f"the disks belong to uid {sorted(owners)}: run as that user to check them"
    for disk in m["disks"]:
        read_disk(cur, d, "r", disk)
    return None


def main(path):
    with open(path) as f:
        m = json.load(f)
    cur = current_build()
    wd = workdir(m["image"])
    ok = False
    d = None
    try:
        files = {}
        for k, name in m["files"].items():
            files[k] = os.path.join(wd, name[:-len(".xz")])
            decompress(os.path.join(os.path.dirname(path), name), files[k])
        spec = RegionSpec("r", files["data"], m["region"]["extent_size"],
                          metadata=files.get("metadata"))
        log(f"{m['image']}: written by {m['commit'][:12]}, opened by {cur.daemon}")
        check_as_found(cur, m, spec)
        d = Daemon(cur, wd, [spec])
        d.start()
        runs = check_served(cur, d, m)
        check_expect(m, runs)
        why = check_disks(cur, d, m) if m["disks"] else None
        d.stop()
        d = None
        rc, rep, text = cur.check(spec.path, spec.metadata, recovered=True)
        if rc != 0:
            raise AssertionError(f"pmemzctl check --recovered: status {rc}\n{text}")
        log("check --recovered after the daemon: clean")
        ok = True
    finally:
        if d is not None:
            d.kill()
        if not ok and d is not None:
            sys.stderr.write(d.log_text())
        if ok and not os.environ.get("PMEMZ_ITEST_KEEP"):
            shutil.rmtree(wd, ignore_errors=True)
        else:
            print(f"kept {wd}", file=sys.stderr)
    if why:
        skip(f"{m['image']}: the region passed, but {why}")
    print(f"PASS: {m['image']} ({m['commit'][:12]})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: test-golden.py MANIFEST", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
