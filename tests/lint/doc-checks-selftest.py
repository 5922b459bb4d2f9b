#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""doc-checks-selftest.py SRC BUILD: every check of doc-checks.py, and
scripts/perf-table --check, passes on copies of the real inputs and fails,
naming the difference, once a copy is changed the way a forgotten update
changes it."""
import os
import shutil
import subprocess
import sys
import tempfile

SRC, BUILD = sys.argv[1], sys.argv[2]
CHECKS = os.path.join(SRC, "tests", "lint", "doc-checks.py")
failed = []


def run(args):
    r = subprocess.run([sys.executable, CHECKS] + args, capture_output=True, text=True,
                       check=False)
    return r.returncode, r.stdout + r.stderr


def expect(what, args, rc, text=None):
    got, out = run(args)
    if got == 77 and rc != 77:
        print(f"skip: {what}: {out.strip()}")
        return
    if got != rc or (text and text not in out):
        failed.append(what)
        print(f"FAIL: {what}: exit {got} (want {rc}), output:\n{out}")
    else:
        print(f"ok: {what}")


def copy(tmp, rel, old=None, new=None):
    """SRC/rel copied into tmp, with old replaced by new (which must be there)."""
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        text = f.read()
    if old is not None:
        if old not in text:
            sys.exit(f"selftest: '{old}' is not in {rel} any more: update the selftest")
        text = text.replace(old, new, 1)
    dest = os.path.join(tmp, rel.replace("/", "_") + (".changed" if old else ""))
    with open(dest, "w", encoding="utf-8") as f:
        f.write(text)
    return dest


def selftest_cli(tmp):
    ctl = os.path.join(BUILD, "client", "pmemzctl")
    man = "docs/pmemzctl.1"
    expect("cli: the man page as it is", ["cli", "--man", copy(tmp, man), "--pmemzctl", ctl], 0)
    expect("cli: a command left out of the synopsis",
           ["cli", "--man", copy(tmp, man, ".B pmemzctl clients\n.br\n", ""), "--pmemzctl", ctl],
           1, "SYNOPSIS: command 'clients' is missing")
    expect("cli: an option left out of the synopsis",
           ["cli", "--man", copy(tmp, man, ".RB [ \\-\\-metadata\n.IR META ]\n", ""),
            "--pmemzctl", ctl], 1, "command 'check': documented")
    fake = os.path.join(tmp, "pmemzctl-more")
    with open(fake, "w", encoding="utf-8") as f:
        f.write('#!/bin/sh\nif [ "$1" = --help ]; then "%s" --help; echo "  frobnicate REGION   new";'
                ' elif [ "$2" = frobnicate ]; then echo "Usage: pmemzctl [OPTIONS] frobnicate REGION";'
                ' else exec "%s" "$@"; fi\n' % (ctl, ctl))
    os.chmod(fake, 0o755)
    expect("cli: a command the man page does not know",
           ["cli", "--man", copy(tmp, man), "--pmemzctl", fake], 1,
           "command 'frobnicate' is missing")


def selftest_metrics(tmp):
    man, src = "docs/pmemzctl.1", "client/pmemzctl/metrics.c"
    expect("metrics: as they are", ["metrics", "--man", copy(tmp, man), "--source", copy(tmp, src)], 0)
    expect("metrics: a new family in the exporter",
           ["metrics", "--man", copy(tmp, man), "--source",
            copy(tmp, src, '"pmemzerod_moves_total"', '"pmemzerod_moved_total"')],
           1, "metric 'pmemzerod_moved_total' is missing")


def selftest_conf(tmp):
    man, src = "docs/pmemzerod.conf.5", "daemon/config/conf-ini.c"
    expect("conf: as it is", ["conf", "--man", copy(tmp, man), "--source", copy(tmp, src)], 0)
    expect("conf: a key left out of the man page",
           ["conf", "--man", copy(tmp, man, '.BI zeroer_threads " = N"', ".B threads"),
            "--source", copy(tmp, src)], 1, "key 'zeroer_threads' is missing")
    expect("conf: a key the parser does not have",
           ["conf", "--man", copy(tmp, man), "--source",
            copy(tmp, src, '"batch_extents"', '"batch_size"')], 1,
           "key 'batch_extents' is documented but the code has none")


def selftest_plugin(tmp):
    pod = "client/nbdkit/nbdkit-pmemz-plugin.pod"
    so = os.path.join(BUILD, "client", "nbdkit", "nbdkit-pmemz-plugin.so")
    if not shutil.which("nbdkit"):
        print("skip: plugin: nbdkit is not installed")
        return
    expect("plugin: as it is", ["plugin", "--pod", copy(tmp, pod), "--plugin", so], 0)
    expect("plugin: a parameter left out of the man page",
           ["plugin", "--pod", copy(tmp, pod, "=item B<socket=>PATH", "=item socket"),
            "--plugin", so], 1, "parameter 'socket' is missing")


def selftest_links(tmp):
    root = os.path.join(tmp, "tree")
    os.makedirs(os.path.join(root, "docs"))
    with open(os.path.join(root, "docs", "A.md"), "w", encoding="utf-8") as f:
        f.write("# A page\n\n## The part\n\nSee [B](B.md), [the part](#the-part), "
                "[out](https://example.org/x.md).\n\n```\n[not a link](nowhere.md)\n```\n")
    with open(os.path.join(root, "docs", "B.md"), "w", encoding="utf-8") as f:
        f.write("# B\n\n[back](A.md#a-page) and [README](../README.md)\n")
    with open(os.path.join(root, "README.md"), "w", encoding="utf-8") as f:
        f.write("[docs](docs/A.md#the-part)\n")
    expect("links: every link resolves", ["links", root], 0)
    with open(os.path.join(root, "README.md"), "a", encoding="utf-8") as f:
        f.write("[gone](docs/C.md) [no heading](docs/B.md#section-9) [a link whose\n"
                "words wrap](docs/D.md)\n")
    got, out = run(["links", root])
    ok = (got == 1 and "'docs/C.md': no such file" in out and "no such heading" in out
          and "README.md:2: 'docs/D.md'" in out)
    print(f"{'ok' if ok else 'FAIL'}: links: a missing file, a missing heading, a wrapped link")
    if not ok:
        failed.append("links")
        print(out)


def selftest_phrases(tmp):
    root = os.path.join(tmp, "phrases")
    os.makedirs(root)
    clean = os.path.join(root, "clean.c")
    with open(clean, "w", encoding="utf-8") as f:
        f.write("struct session s; /* the session field of /proc; a helper function */\n")
    expect("phrases: technical words pass", ["phrases", root, clean], 0)
    for text in ("measured in the sixth session", "as the lead asked",
                 "the other helpers' builds", "fixed this morning", "see issue 24",
                 "(issue #25)"):
        bad = os.path.join(root, "bad.md")
        with open(bad, "w", encoding="utf-8") as f:
            f.write(f"Some text,\n{text}.\n")
        expect(f"phrases: '{text}' fails", ["phrases", root, bad], 1, "bad.md:2:")


def selftest_perf_table(tmp):
    docs = os.path.join(tmp, "docs")
    shutil.copytree(os.path.join(SRC, "docs"), docs)
    table = [os.path.join(SRC, "scripts", "perf-table"), "--check", "--docs", docs]

    def check(what, rc):
        r = subprocess.run([sys.executable] + table, capture_output=True, text=True, check=False)
        ok = r.returncode == rc and (rc == 0 or "not the render" in r.stderr)
        print(f"{'ok' if ok else 'FAIL'}: perf-table: {what}")
        if not ok:
            failed.append(f"perf-table: {what}")
            print(r.stdout + r.stderr)

    def edit(name, old, new):
        """Replace old by new in docs/name; its text before."""
        path = os.path.join(docs, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new, 1))
        return text

    check("the page as it is", 0)
    before = edit("bench-disk.json", '"commit": "', '"commit": "0ther')
    check("a JSON that no longer matches the table", 1)
    with open(os.path.join(docs, "bench-disk.json"), "w", encoding="utf-8") as f:
        f.write(before)
    edit("PERFORMANCE.md", "| met |", "| **missed** |")
    check("a table edited by hand", 1)


def main():
    tmp = tempfile.mkdtemp(prefix="doc-checks-selftest-")
    try:
        for t in (selftest_cli, selftest_metrics, selftest_conf, selftest_plugin,
                  selftest_links, selftest_phrases, selftest_perf_table):
            t(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        print(f"{len(failed)} selftest(s) failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
