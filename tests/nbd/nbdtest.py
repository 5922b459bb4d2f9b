# SPDX-License-Identifier: MIT
"""Harness of the nbdkit-pmemz-plugin tests: the real pmemzerod on a
private directory under /dev/shm (socket, configuration, file region, logs)
and nbdkit with the plugin on a Unix socket, driven with libnbd's Python
bindings.  Both processes die with the test (PR_SET_PDEATHSIG).

Environment (set by tests/nbd/nbd.cmake):
  PMEMZ_DAEMON   pmemzerod          PMEMZ_CTL   pmemzctl
  PMEMZ_PLUGIN   nbdkit-pmemz-plugin.so, the plugin as installed
  PMEMZ_PLUGIN_TEST   its test build (journal-slots=): what makes a disk whose
                      journal is small (Nbdkit journal_slots); every later
                      start runs the installed plugin, which reads the length
                      from the superblock
  PMEMZ_NBD_SHIM      pmemz-nbd-shim.so (tests/nbd/pmemz-shim.c), preloaded
                      into nbdkit when a PMEMZ_SHIM_* setting is given (in the
                      environment: a variant's; or Nbdkit shim=)
  PMEMZ_NBD_ARGS      more plugin parameters (the -sync variants: writeback=0)
  PMEMZ_NBDKIT        the nbdkit to run (a sanitizer build: tests/nbdkit-sanitized,
                      which preloads the runtime)
  PMEMZ_NBD_SANITIZED=1  the plugin is a sanitizer build: skip (77) unless PMEMZ_NBDKIT is set
  PMEMZ_ITEST_KEEP=1  keep the directory (logs, region)
"""
import ctypes
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
MIB = 1 << 20

try:
    import nbd  # python3-libnbd
except ImportError:
    nbd = None


def skip(why):
    print(f"SKIP: {why}", file=sys.stderr)
    sys.exit(SKIP)


def need_tools(*tools):
    if os.environ.get("PMEMZ_NBD_SANITIZED") == "1" and not os.environ.get("PMEMZ_NBDKIT"):
        skip("the plugin is built with a sanitizer (PMEMZ_SANITIZE) and Debian's nbdkit "
             "cannot load it (the sanitizer's runtime must come first in the process, and "
             "this compiler has no shared one to preload); set PMEMZ_NBDKIT to an nbdkit "
             "wrapper that preloads it to run these tests")
    if nbd is None:
        skip("python3-libnbd is not installed (apt-get install python3-libnbd)")
    for t in ("nbdkit",) + tools:
        if shutil.which(t) is None:
            skip(f"{t} is not installed (see scripts/deps)")


_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    _libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def wait_for(cond, what, timeout=20.0, proc=None, log=None):
    """Poll cond() until it is true; fail when a process exits first or on timeout."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        if cond():
            return
        if proc is not None and proc.poll() is not None:
            dump(log)
            raise AssertionError(f"{what}: process exited with {proc.returncode}")
        if time.monotonic() > deadline:
            dump(log)
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def dump(path):
    if path and os.path.exists(path):
        with open(path, errors="replace") as f:
            sys.stderr.write(f"----- {path} -----\n{f.read()}-----\n")


def connectable(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


class Env:
    """One test's daemon, nbdkit processes and files."""

    def __init__(self, name, region_size="64M", extent="1M", extra_region="", daemon_conf=""):
        self.daemon_path = os.environ["PMEMZ_DAEMON"]
        self.ctl_path = os.environ.get("PMEMZ_CTL")
        self.plugin = os.environ["PMEMZ_PLUGIN"]
        self.dir = tempfile.mkdtemp(prefix=f"pmemz-nbd-{name}-", dir="/dev/shm")
        self.sock = os.path.join(self.dir, "d.sock")
        self.conf = os.path.join(self.dir, "pmemzerod.conf")
        self.log = os.path.join(self.dir, "daemon.log")
        self.region = "r"
        self.image = os.path.join(self.dir, "r.img")
        self.extent = parse_size(extent)
        with open(self.conf, "w") as f:
            f.write(f"{daemon_conf}[region r]\npath = {self.image}\nsize = {region_size}\n"
                    f"extent_size = {extent}\n{extra_region}")
        self.daemon = None
        self.nbdkits = []

    # ---- pmemzerod ----
    def start_daemon(self):
        assert self.daemon is None
        logf = open(self.log, "a")
        logf.write("=== nbdtest: starting pmemzerod\n")
        logf.flush()
        self.daemon = subprocess.Popen(
            [self.daemon_path, "-d", "--socket", self.sock, "-c", self.conf],
            stdout=logf, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        logf.close()
        wait_for(lambda: connectable(self.sock), "pmemzerod start", proc=self.daemon,
                 log=self.log)

    def stop_daemon(self):
        self.daemon.send_signal(signal.SIGTERM)
        rc = self.daemon.wait(timeout=20)
        self.daemon = None
        if rc != 0:
            dump(self.log)
            raise AssertionError(f"pmemzerod exited with {rc}")

    def kill_daemon(self):
        self.daemon.kill()
        self.daemon.wait()
        self.daemon = None

    def ctl(self, *args, check=True):
        p = subprocess.run([self.ctl_path, "--socket", self.sock, *args], capture_output=True,
                           text=True, timeout=60)
        if check and p.returncode != 0:
            raise AssertionError(f"pmemzctl {' '.join(args)}: {p.returncode}\n{p.stdout}{p.stderr}")
        return p

    def check_region(self):
        """pmemzctl check on the region file (the daemon stopped): clean."""
        assert self.daemon is None
        p = subprocess.run([self.ctl_path, "check", self.image], capture_output=True, text=True,
                           timeout=120)
        if p.returncode != 0:
            raise AssertionError(f"pmemzctl check: {p.returncode}\n{p.stdout}{p.stderr}")
        return p.stdout

    def region_stat(self):
        out = json.loads(self.ctl("--json", "regions").stdout)
        return next(r for r in out["regions"] if r["name"] == self.region)

    def wait_zeroed(self):
        """Until the zeroer has zeroed every free extent (recovered leases too)."""
        wait_for(lambda: self.region_stat()["dirty"] == 0, "background zeroing",
                 proc=self.daemon, log=self.log)

    def tags(self, prefix=""):
        out = json.loads(self.ctl("--json", "tags", self.region).stdout)
        items = out if isinstance(out, list) else out.get("tags", [])
        return [t for t in items if t["name"].startswith(prefix)]

    def chunk_tags(self, disk="d"):
        """The disk's chunk tags (not its superblock, not the extents it owns ahead)."""
        return [t for t in self.tags(f"nbd/{disk}/")
                if "/ahead/" not in t["name"] and "/pool/" not in t["name"]]

    # ---- nbdkit ----
    def nbdkit(self, disk="d", size=None, wait=True, extra=(), name=None, opts=(), shim=None,
               journal_slots=None):
        n = Nbdkit(self, disk, size, extra, name or f"nbd{len(self.nbdkits)}", opts, shim,
                   journal_slots)
        self.nbdkits.append(n)
        n.start(wait)
        return n

    def cleanup(self, ok):
        for n in self.nbdkits:
            n.kill()
        if self.daemon is not None:
            self.kill_daemon()
        if ok and not os.environ.get("PMEMZ_ITEST_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            print(f"kept {self.dir}", file=sys.stderr)


class Nbdkit:
    """One nbdkit.  shim: PMEMZ_SHIM_* settings of pmemz-nbd-shim for this process
    (None: the environment's, a variant's; {}: none).  journal_slots: the disk is
    made by the plugin's test build with a journal of that many records; later
    starts run the installed plugin."""

    def __init__(self, env, disk, size, extra, name, opts=(), shim=None, journal_slots=None):
        self.env = env
        self.opts = list(opts)  # nbdkit's own options
        self.shim = shim
        self.journal_slots = journal_slots
        self.disk = disk
        self.size = size
        self.extra = list(extra)
        self.sock = os.path.join(env.dir, f"{name}.sock")
        self.log = os.path.join(env.dir, f"{name}.log")
        self.pidfile = os.path.join(env.dir, f"{name}.pid")
        self.proc = None

    def args(self):
        plugin = os.environ["PMEMZ_PLUGIN_TEST"] if self.journal_slots else self.env.plugin
        a = [os.environ.get("PMEMZ_NBDKIT", "nbdkit"), "-f", "-v", "-P", self.pidfile,
             "-U", self.sock, *self.opts, plugin,
             f"region={self.env.region}", f"disk={self.disk}", f"socket={self.env.sock}"]
        if self.size is not None:
            a.append(f"size={self.size}")
        if self.journal_slots:
            a.append(f"journal-slots={self.journal_slots}")
        # PMEMZ_NBD_ARGS: plugin parameters of a variant (e.g. writeback=0)
        return a + os.environ.get("PMEMZ_NBD_ARGS", "").split() + self.extra

    def environ(self):
        """nbdkit's environment: the shim preloaded when it has settings."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PMEMZ_SHIM_")}
        shim = self.shim if self.shim is not None else \
            {k: v for k, v in os.environ.items() if k.startswith("PMEMZ_SHIM_")}
        if shim:
            env.update(shim)
            # after what is preloaded already (a sanitizer runtime must come first)
            env["LD_PRELOAD"] = ":".join(p for p in (os.environ.get("LD_PRELOAD"),
                                                     os.environ["PMEMZ_NBD_SHIM"]) if p)
        return env

    def start(self, wait=True):
        for f in (self.sock, self.pidfile):
            if os.path.exists(f):
                os.unlink(f)
        env = self.environ()
        logf = open(self.log, "a")
        shim = " ".join(f"{k}={v}" for k, v in sorted(env.items()) if k.startswith("PMEMZ_SHIM_"))
        logf.write(f"=== nbdtest: {shim + ' ' if shim else ''}{' '.join(self.args())}\n")
        logf.flush()
        self.proc = subprocess.Popen(self.args(), stdout=logf, stderr=subprocess.STDOUT,
                                     preexec_fn=_die_with_parent, env=env)
        logf.close()
        if wait:
            # the pid file, not a probe: a connection that closes in the
            # handshake leaves nbdkit 1.32 hanging at exit under ASan
            wait_for(lambda: os.path.exists(self.pidfile) and os.path.getsize(self.pidfile) > 0,
                     "nbdkit start", proc=self.proc, log=self.log)
            # made: from now on the installed plugin reads the journal's length from it
            self.journal_slots = None

    def expect_exit(self, timeout=30):
        """The process refused to start: its exit status and its log."""
        rc = self.proc.wait(timeout=timeout)
        self.proc = None
        with open(self.log, errors="replace") as f:
            return rc, f.read()

    def open_handles(self):
        """Plugin handles of this run that nbdkit has not closed yet (its -v log)."""
        with open(self.log, errors="replace") as f:
            run = f.read().rsplit("=== nbdtest:", 1)[-1]
        return run.count("pmemz: open returned handle") - run.count("debug: pmemz: close")

    def stop(self):
        # nbdkit quitting leaves the plugin's handles of connections still
        # open unclosed, on purpose (LeakSanitizer reports them): a client
        # that has just disconnected is given the time to be closed first
        deadline = time.monotonic() + 10
        while self.open_handles() > 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=30)
        self.proc = None
        if rc != 0:
            dump(self.log)
            raise AssertionError(f"nbdkit exited with {rc}")

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def uri(self):
        return f"nbd+unix:///?socket={self.sock}"

    def connect(self):
        h = nbd.NBD()
        h.add_meta_context("base:allocation")
        h.connect_unix(self.sock)
        return h


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if s[-1] in mult:
        return int(s[:-1]) * mult[s[-1]]
    return int(s)


def allocation(h, size):
    """Block status of the whole disk: list of (offset, length, flags)."""
    out = []
    off = 0
    while off < size:
        got = []

        def cb(ctx, o, entries, err):
            if ctx == "base:allocation":
                got.extend(entries)
            return 0

        h.block_status(min(size - off, 1 << 30), off, cb)
        assert got, "no extents returned"
        for i in range(0, len(got), 2):
            ln = min(got[i], size - off)
            out.append((off, ln, got[i + 1]))
            off += ln
            if off >= size:
                break
    return out


def nbd_errno(e):
    return getattr(e, "errnum", None)  # .errno is its name ("ENOSPC")


def run(tests, argv):
    """main: run the test named by argv[1] with a fresh Env; 0, 1 or 77."""
    need_tools()
    if len(argv) != 2 or argv[1] not in tests:
        print(f"usage: {argv[0]} {'|'.join(tests)}", file=sys.stderr)
        return 2
    fn, env_kw = tests[argv[1]]
    env = Env(argv[1], **env_kw)
    ok = False
    try:
        fn(env)
        ok = True
    finally:
        if not ok:
            for n in env.nbdkits:
                dump(n.log)
            dump(env.log)
        env.cleanup(ok)
    print(f"PASS: {argv[1]}")
    return 0


__all__ = ["Env", "MIB", "SKIP", "allocation", "errno", "nbd", "nbd_errno", "need_tools", "run",
           "skip", "wait_for"]
