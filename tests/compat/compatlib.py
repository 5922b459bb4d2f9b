# SPDX-License-Identifier: MIT
"""The compatibility tests' plumbing (tests/compat): the programs of one
build (an older commit's or this tree's), pmemzerod and nbdkit processes on
private files, libpmemzclient through ctypes (so that one driver talks to
any build's library through its public API), and images kept as sparse
files compressed with xz.

Nothing here knows what a test writes or expects: workloads.py does.
"""
import ctypes
import errno
import hashlib
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tempfile

# The nbd tests' harness: process helpers, nbdkit with the plugin, block status.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nbd"))
from nbdtest import _die_with_parent, allocation, connectable, dump, nbd, wait_for  # noqa: E402
from nbdtest import Nbdkit as _Nbdkit  # noqa: E402

SKIP = 77
KIB = 1 << 10
MIB = 1 << 20
BLOCK = 4096
NOBODY = 65534  # the second tenant of the images, where the writer runs as root

def skip(why):
    print("#" * 72, file=sys.stderr)
    print(f"SKIP: {why}", file=sys.stderr)
    print("#" * 72, file=sys.stderr)
    sys.exit(SKIP)


def log(msg):
    print(f"compat: {msg}", flush=True)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(MIB), b""):
            h.update(chunk)
    return h.hexdigest()


def workdir(name):
    """A private directory others may enter (a second tenant reaches the socket)."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    d = tempfile.mkdtemp(prefix=f"pmemz-compat-{name}-", dir=base)
    os.chmod(d, 0o755)
    return d


# ---- images: sparse files, xz-compressed in the tree ----

def compress(src, dst):
    """src (a sparse file) -> dst.xz; the holes cost nothing once compressed."""
    with open(src, "rb") as f, lzma.open(dst, "wb", preset=9 | lzma.PRESET_EXTREME) as out:
        for chunk in iter(lambda: f.read(MIB), b""):
            out.write(chunk)


def decompress(src, dst):
    """src.xz -> dst, zero blocks left as holes (the region files stay sparse)."""
    zero = bytes(BLOCK)
    size = 0
    with lzma.open(src, "rb") as f, open(dst, "wb") as out:
        while True:
            block = f.read(BLOCK)
            if not block:
                break
            if block != zero[:len(block)]:
                out.seek(size)
                out.write(block)
            size += len(block)
        out.truncate(size)


# ---- one build's programs ----

class Build:
    """pmemzerod, pmemzctl, libpmemzclient and nbdkit-pmemz-plugin of one build."""

    def __init__(self, name, daemon, ctl, lib, plugin=None):
        self.name = name
        self.daemon = daemon
        self.ctl = ctl
        self.lib = lib or None
        self.plugin = plugin if plugin and os.path.exists(plugin) else None
        for p in (daemon, ctl) + ((lib,) if lib else ()):
            if not os.path.exists(p):
                raise FileNotFoundError(f"{name}: {p} is missing")

    @classmethod
    def tree(cls, name, build_dir):
        """The programs where this project's CMake puts them in a build tree."""
        return cls(name, os.path.join(build_dir, "daemon/pmemzerod"),
                   os.path.join(build_dir, "client/pmemzctl"),
                   os.path.join(build_dir, "client/libpmemzclient.so.1"),
                   os.path.join(build_dir, "client/nbdkit/nbdkit-pmemz-plugin.so"))

    def check(self, path, metadata=None, recovered=False):
        """pmemzctl check --json: (exit status, report or None)."""
        args = [self.ctl, "--json", "check"]
        if recovered:
            args.append("--recovered")
        if metadata:
            args += ["--metadata", metadata]
        p = subprocess.run(args + [path], capture_output=True, text=True, timeout=300)
        try:
            rep = json.loads(p.stdout)
        except ValueError:
            rep = None
        return p.returncode, rep, p.stdout + p.stderr


class RegionSpec:
    """A [region NAME] section: a file region, inline or with metadata = PATH."""

    def __init__(self, name, path, extent, size=None, metadata=None, allow_users=()):
        self.name = name
        self.path = path
        self.extent = extent
        self.size = size
        self.metadata = metadata
        self.allow_users = list(allow_users)

    def conf(self):
        s = f"[region {self.name}]\npath = {self.path}\nextent_size = {self.extent}\n"
        if self.size:
            s += f"size = {self.size}\n"
        if self.metadata:
            s += f"metadata = {self.metadata}\n"
        if self.allow_users:
            s += f"allow_users = {', '.join(str(u) for u in self.allow_users)}\n"
        return s


class Daemon:
    """One pmemzerod of a build on a private socket; admin: the caller's group."""

    def __init__(self, build, wdir, regions, tag="daemon"):
        self.build = build
        self.dir = wdir
        self.regions = {r.name: r for r in regions}
        self.sock = os.path.join(wdir, f"{tag}.sock")
        self.conf = os.path.join(wdir, f"{tag}.conf")
        self.log = os.path.join(wdir, f"{tag}.log")
        self.proc = None
        with open(self.conf, "w") as f:
            f.write(f"[daemon]\nadmin_group = {os.getgid()}\n\n")
            for r in regions:
                f.write(r.conf() + "\n")

    def start(self):
        assert self.proc is None
        with open(self.log, "a") as logf:
            logf.write(f"=== compat: starting {self.build.name} pmemzerod\n")
            logf.flush()
            self.proc = subprocess.Popen([self.build.daemon, "-d", "--socket", self.sock, "-c",
                                          self.conf], stdout=logf, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent)
        wait_for(lambda: connectable(self.sock), f"{self.build.name} pmemzerod start",
                 proc=self.proc, log=self.log)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        self.proc = None
        if rc != 0:
            dump(self.log)
            raise AssertionError(f"{self.build.name} pmemzerod exited with status {rc}")

    def kill(self):
        """SIGKILL: leases in flight stay LEASED on the media."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def ctl(self, *args, check=True):
        p = subprocess.run([self.build.ctl, "--socket", self.sock, *args], capture_output=True,
                           text=True, timeout=120)
        if check and p.returncode != 0:
            dump(self.log)
            raise AssertionError(f"{self.build.name} pmemzctl {' '.join(args)}: status "
                                 f"{p.returncode}\n{p.stdout}{p.stderr}")
        return p

    def json(self, *args):
        return json.loads(self.ctl("--json", *args).stdout)

    def region_stat(self, name):
        return next(r for r in self.json("regions")["regions"] if r["name"] == name)

    def tags(self, name):
        """Every tag of the region (admin), sorted by (name, uid)."""
        out = self.json("tags", name, "--all")
        tags = out if isinstance(out, list) else out["tags"]
        return sorted(tags, key=lambda t: (t["name"], t["uid"]))

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


# ---- committed bytes, read from the files with the daemon's runs ----

def region_bytes(spec, stat, runs):
    """The bytes of these runs of extents, in extent order, from the data file."""
    es = stat["extent_size"]
    out = bytearray()
    with open(spec.path, "rb") as f:
        for r in sorted(runs, key=lambda r: r["first"]):
            f.seek(stat["data_offset"] + r["first"] * es)
            out += f.read(r["count"] * es)
    return bytes(out)


def tag_view(daemon, name):
    """What a daemon serves: every tag with its uid, runs and the digest of its bytes."""
    spec = daemon.regions[name]
    stat = daemon.region_stat(name)
    view = []
    for t in daemon.tags(name):
        runs = sorted(({"first": r["first"], "count": r["count"]} for r in t["runs"]),
                      key=lambda r: r["first"])
        view.append({"name": t["name"], "uid": t["uid"], "extents": t["extents"], "runs": runs,
                     "sha256": sha256(region_bytes(spec, stat, runs))})
    return view


# ---- libpmemzclient through ctypes ----

class ClientError(Exception):
    def __init__(self, call, r, msg):
        super().__init__(f"{call}: {os.strerror(-r)} ({r}): {msg}")
        self.errno = -r


class Lib:
    """A build's libpmemzclient.so.1: its public API only."""

    def __init__(self, path):
        self.path = path
        so = ctypes.CDLL(path)
        vp, sz, c_int, c_uint = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_uint
        pvp = ctypes.POINTER(vp)
        sigs = {
            "pmemz_errormsg": (ctypes.c_char_p, []),
            "pmemz_client_new": (c_int, [ctypes.c_char_p, pvp]),
            "pmemz_client_free": (None, [vp]),
            "pmemz_client_reconnect": (c_int, [vp]),
            "pmemz_region_open": (c_int, [vp, ctypes.c_char_p, pvp]),
            "pmemz_region_close": (None, [vp]),
            "pmemz_region_extent_size": (sz, [vp]),
            "pmemz_region_address": (vp, [vp]),
            "pmemz_region_set_reserve": (c_int, [vp, sz]),
            "pmemz_alloc_new": (c_int, [vp, sz, c_uint, pvp]),
            "pmemz_alloc_count": (sz, [vp]),
            "pmemz_alloc_range": (vp, [vp, sz, ctypes.POINTER(sz)]),
            "pmemz_alloc_commit": (c_int, [vp, ctypes.c_char_p, c_uint]),
            "pmemz_alloc_open": (c_int, [vp, ctypes.c_char_p, pvp]),
            "pmemz_alloc_release": (c_int, [vp]),
            "pmemz_alloc_close": (None, [vp]),
            "pmemz_persist": (c_int, [vp, vp, sz]),
            "pmemz_batch_new": (c_int, [vp, pvp]),
            "pmemz_batch_move": (c_int, [vp, vp, vp, ctypes.c_char_p, pvp]),
            "pmemz_batch_wait": (c_int, [vp]),
            "pmemz_batch_free": (None, [vp]),
        }
        for fn, (res, args) in sigs.items():
            f = getattr(so, fn)
            f.restype = res
            f.argtypes = args
        self.so = so

    def call(self, fn, *args):
        r = getattr(self.so, fn)(*args)
        if r < 0:
            raise ClientError(fn, r, self.so.pmemz_errormsg().decode(errors="replace"))
        return r


class Client:
    def __init__(self, lib, sock):
        self.lib = lib
        self.h = ctypes.c_void_p()
        lib.call("pmemz_client_new", sock.encode(), ctypes.byref(self.h))

    def region(self, name):
        return Region(self, name)

    def reconnect(self):
        return self.lib.so.pmemz_client_reconnect(self.h)

    def close(self):
        if self.h:
            self.lib.so.pmemz_client_free(self.h)
            self.h = ctypes.c_void_p()


class Region:
    def __init__(self, client, name):
        self.lib = client.lib
        self.h = ctypes.c_void_p()
        self.lib.call("pmemz_region_open", client.h, name.encode(), ctypes.byref(self.h))
        self.extent = self.lib.so.pmemz_region_extent_size(self.h)
        self.base = self.lib.so.pmemz_region_address(self.h)

    def alloc(self, extents):
        a = ctypes.c_void_p()
        self.lib.call("pmemz_alloc_new", self.h, extents * self.extent, 0, ctypes.byref(a))
        return Alloc(self, a)

    def open(self, tag):
        a = ctypes.c_void_p()
        self.lib.call("pmemz_alloc_open", self.h, tag.encode(), ctypes.byref(a))
        return Alloc(self, a)

    def set_reserve(self, extents):
        self.lib.call("pmemz_region_set_reserve", self.h, extents * self.extent)

    def move(self, src, tags):
        """One MOVE request: src's first extents (address order) to new tags, one each."""
        b = ctypes.c_void_p()
        self.lib.call("pmemz_batch_new", self.h, ctypes.byref(b))
        try:
            starts = src.extent_offsets()
            for off, tag in zip(starts, tags):
                self.lib.call("pmemz_batch_move", b, src.h, self.base + off, tag.encode(), None)
            self.lib.call("pmemz_batch_wait", b)
        finally:
            self.lib.so.pmemz_batch_free(b)


class Alloc:
    """A lease or a committed tag: its ranges in the caller's mapping."""

    def __init__(self, region, h):
        self.region = region
        self.lib = region.lib
        self.h = h

    def ranges(self):
        """(offset in the region mapping, length), sorted by offset."""
        out = []
        for i in range(self.lib.so.pmemz_alloc_count(self.h)):
            n = ctypes.c_size_t()
            p = self.lib.so.pmemz_alloc_range(self.h, i, ctypes.byref(n))
            out.append((p - self.region.base, n.value))
        return sorted(out)

    def extent_offsets(self):
        es = self.region.extent
        return [off + k * es for off, n in self.ranges() for k in range(n // es)]

    def write(self, content):
        """Fill every extent with content(offset in the mapping, length), then persist."""
        for off, n in self.ranges():
            data = content(off, n)
            ctypes.memmove(self.region.base + off, data, n)
            self.lib.call("pmemz_persist", self.region.h, self.region.base + off, n)

    def read(self):
        return b"".join(ctypes.string_at(self.region.base + off, n) for off, n in self.ranges())

    def commit(self, tag):
        self.lib.call("pmemz_alloc_commit", self.h, tag.encode(), 0)

    def release(self):
        self.lib.call("pmemz_alloc_release", self.h)

    def close(self):
        self.lib.so.pmemz_alloc_close(self.h)


# ---- nbdkit with a build's plugin ----

def need_nbd():
    if nbd is None:
        skip("python3-libnbd is not installed (apt-get install python3-libnbd): "
             "the disks are NOT checked")
    if shutil.which("nbdkit") is None:
        skip("nbdkit is not installed (apt-get install nbdkit): the disks are NOT checked")


class _NbdEnv:
    """What nbdtest.Nbdkit reads of its test's environment."""

    def __init__(self, build, daemon, region):
        self.dir = daemon.dir
        self.plugin = build.plugin
        self.region = region
        self.sock = daemon.sock


def Nbdkit(build, daemon, region, disk, size=None, params=()):
    """nbdkit serving one disk of a region with build's plugin, on a Unix
    socket in the daemon's directory (tests/nbd/nbdtest.py's Nbdkit)."""
    tag = "".join(ch if ch.isalnum() else "-" for ch in build.name)
    return _Nbdkit(_NbdEnv(build, daemon, region), disk, size, list(params), f"nbd-{tag}-{disk}")


def holes(h, size, chunk):
    """Chunks block status reports as holes (never written, or given back)."""
    found = set()
    for off, n, flags in allocation(h, size):
        if flags & 1:  # NBD_STATE_HOLE
            found.update(range((off + chunk - 1) // chunk, (off + n) // chunk))
    return sorted(found)


def disk_blocks(h, size):
    """sha256 of every non-zero 4 KiB block of the disk: {index: digest}."""
    zero = bytes(BLOCK)
    out = {}
    for off in range(0, size, MIB):
        data = h.pread(min(MIB, size - off), off)
        for k in range(0, len(data), BLOCK):
            b = data[k:k + BLOCK]
            if b != zero[:len(b)]:
                out[str((off + k) // BLOCK)] = sha256(b)
    return out


__all__ = ["BLOCK", "Build", "Client", "ClientError", "Daemon", "KIB", "Lib", "MIB", "NOBODY",
           "Nbdkit", "RegionSpec", "SKIP", "compress", "decompress", "disk_blocks", "dump",
           "errno", "file_sha256", "holes", "log", "need_nbd", "region_bytes", "sha256", "skip",
           "tag_view", "wait_for", "workdir"]
