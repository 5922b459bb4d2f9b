#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""record-proxy.py LISTEN DAEMON OUTDIR NAME HEADER: relay connections to pmemzerod, record their frames.

Listens on the Unix socket LISTEN; each connection accepted there is relayed
to the daemon's socket DAEMON, both ways, with the file descriptors the
daemon passes (SCM_RIGHTS, OPEN_REGION) handed on with the same bytes.
The frames of connection i are written to OUTDIR/NAME-i.frames as they go,
after the comment lines of the file HEADER, one per line in the order the proxy saw them (the format is in
tests/wire/README.md).  Runs until SIGTERM.  Used by record-baseline.sh
only; the tests read the frames, never run this.
"""
import os
import signal
import socket
import struct
import sys
import threading

HDR = 4
FRAME_MAX = 64 * 1024


class Recorder:
    """The frames of one connection, in the order both directions produced them."""

    def __init__(self, path, header):
        self.lock = threading.Lock()
        self.out = open(path, "w", encoding="ascii")
        self.out.write(header)
        self.out.flush()

    def frame(self, tag, data):
        with self.lock:
            self.out.write(f"{tag} {data.hex()}\n")
            self.out.flush()

    def close(self):
        with self.lock:
            self.out.close()


class Splitter:
    """Cuts a byte stream into frames (4-byte little-endian length, payload)."""

    def __init__(self, rec, tag):
        self.rec, self.tag, self.buf, self.fds = rec, tag, b"", 0

    def feed(self, data, fds):
        self.buf += data
        self.fds += fds
        while len(self.buf) >= HDR:
            (n,) = struct.unpack("<I", self.buf[:HDR])
            if n == 0 or n > FRAME_MAX:
                raise ValueError(f"{self.tag}: bad frame length {n}")
            if len(self.buf) < HDR + n:
                return
            tag = self.tag
            if self.fds:
                tag += "+fd"
                self.fds -= 1
            self.rec.frame(tag, self.buf[: HDR + n])
            self.buf = self.buf[HDR + n :]


def relay(src, dst, split, pass_fds):
    try:
        while True:
            if pass_fds:
                data, fds, _, _ = socket.recv_fds(src, 1 << 16, 4)
            else:
                data, fds = src.recv(1 << 16), []
            if not data:
                break
            split.feed(data, len(fds))
            if fds:
                socket.send_fds(dst, [data], fds)
                for fd in fds:
                    os.close(fd)
            else:
                dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(conn, daemon, path, header):
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    up.connect(daemon)
    rec = Recorder(path, header)
    threads = [
        threading.Thread(target=relay, args=(conn, up, Splitter(rec, "C"), False)),
        threading.Thread(target=relay, args=(up, conn, Splitter(rec, "D"), True)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec.close()
    conn.close()
    up.close()


def main():
    if len(sys.argv) != 6:
        sys.exit("usage: record-proxy.py LISTEN DAEMON OUTDIR NAME HEADER-FILE")
    listen, daemon, outdir, name, header_file = sys.argv[1:]
    with open(header_file, encoding="ascii") as f:
        header = f.read()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(listen)
    srv.listen(8)
    i = 0
    while True:
        conn, _ = srv.accept()
        i += 1
        # one connection at a time: the frames' order is the workload's
        serve(conn, daemon, os.path.join(outdir, f"{name}-{i}.frames"), header)


if __name__ == "__main__":
    main()
