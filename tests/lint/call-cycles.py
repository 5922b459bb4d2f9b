#!/usr/bin/env python3
"""Fail when the files of one source folder call each other in a circle.

Usage: call-cycles.py [--src SOURCE_DIR] BUILD_DIR FOLDER... [--not-yet FOLDER...]

For every FOLDER (relative to the source tree, e.g. daemon/storage) this
reads, with nm, the symbol tables of the object files CMake compiled from
that folder's sources, and draws the graph "file A calls a function defined
in file B": an edge A -> B for every undefined symbol (U) of A.o that B.o
defines as code (T, W).  A cycle in that graph means the files are not in
layers: a reader cannot understand the lower one without the upper one.

Folders given after --not-yet are reported the same way but do not fail
the test (their layering is being reworked elsewhere).  With --src, an
object whose source file is gone (left in the build tree by a rename) is
not read (a generated source, in BUILD_DIR, is).  $NM names nm (CMake's CMAKE_NM).

Exit 0: no cycle in the checked folders; 1: a cycle; 77: nm is missing or
nothing was built.
"""

import os
import shutil
import subprocess
import sys
from collections import defaultdict, deque

CODE = {"T", "W"}


def object_files(build):
    """Yield (source path relative to the tree, object path)."""
    for root, dirs, files in os.walk(build):
        dirs.sort()
        rel_root = os.path.relpath(root, build)
        parts = rel_root.split(os.sep)
        if "CMakeFiles" not in parts:
            continue
        i = parts.index("CMakeFiles")
        # <cmake dir>/CMakeFiles/<target>.dir/<source relative to cmake dir>.o
        if len(parts) < i + 2 or not parts[i + 1].endswith(".dir"):
            continue
        cmake_dir = parts[:i]
        rel_src = parts[i + 2:]
        if ".." in rel_src or "__" in rel_src:
            continue  # a source from another folder: its own folder's build is read
        for f in sorted(files):
            if not f.endswith(".c.o"):
                continue
            src = os.path.normpath(os.path.join(*(cmake_dir + rel_src + [f[:-2]])))
            yield src, os.path.join(root, f)


NM = os.environ.get("NM") or "nm"


def symbols(obj):
    out = subprocess.run([NM, "--format=posix", obj], check=True, capture_output=True,
                         text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        if f[1] in CODE:
            defined.add(f[0])
        elif f[1] == "U":
            undefined.add(f[0])
    return defined, undefined


def graph(files):
    """files: {name: (defined, undefined)} -> {a: {b: [symbols]}}."""
    owner = {}
    for name, (defined, _) in files.items():
        for s in defined:
            owner[s] = name
    edges = defaultdict(lambda: defaultdict(list))
    for name, (_, undefined) in files.items():
        for s in sorted(undefined):
            b = owner.get(s)
            if b is not None and b != name:
                edges[name][b].append(s)
    return edges


def strongly_connected(nodes, edges):
    """Tarjan, iterative; components of more than one file."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    return comps


def shortest_cycle(start, comp, edges):
    """The shortest chain start -> ... -> start inside comp."""
    prev = {start: None}
    q = deque([start])
    while q:
        v = q.popleft()
        for w in sorted(edges[v]):
            if w not in comp:
                continue
            if w == start:
                chain = [v]
                while prev[chain[-1]] is not None:
                    chain.append(prev[chain[-1]])
                chain.reverse()
                return chain + [start]
            if w not in prev:
                prev[w] = v
                q.append(w)
    return None


def canonical(cycle):
    body = cycle[:-1]
    i = body.index(min(body))
    return tuple(body[i:] + body[:i])


def check(folder, by_folder):
    files = by_folder.get(folder)
    if not files:
        print(f"{folder}: no object files (not built here)")
        return None
    edges = graph(files)
    comps = strongly_connected(sorted(files), edges)
    if not comps:
        print(f"{folder}: {len(files)} files, no cycle")
        return 0
    seen = set()
    for comp in comps:
        print(f"{folder}: these files call each other in a circle: {', '.join(comp)}")
        members = set(comp)
        for start in comp:
            cyc = shortest_cycle(start, members, edges)
            if cyc is None or canonical(cyc) in seen:
                continue
            seen.add(canonical(cyc))
            print("  cycle: " + " -> ".join(cyc))
            for a, b in zip(cyc, cyc[1:]):
                syms = edges[a][b]
                more = f" (+{len(syms) - 3})" if len(syms) > 3 else ""
                print(f"    {a} -> {b}: {', '.join(syms[:3])}{more}")
    return len(comps)


def main(argv):
    src = None
    if len(argv) > 2 and argv[1] == "--src":
        src = argv[2]
        argv = argv[:1] + argv[3:]
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    if shutil.which(NM) is None:
        print(f"SKIP: {NM} not found (binutils)")
        return 77
    build = argv[1]
    checked, not_yet = [], []
    target = checked
    for a in argv[2:]:
        if a == "--not-yet":
            target = not_yet
            continue
        target.append(a.strip("/"))

    by_folder = defaultdict(dict)
    wanted = set(checked) | set(not_yet)
    for rel, obj in object_files(build):
        folder = os.path.dirname(rel)
        if folder not in wanted:
            continue
        if src is not None and not (os.path.exists(os.path.join(src, rel))
                                    or os.path.exists(os.path.join(build, rel))):
            continue  # gone from the tree (a stale object); generated sources are in build
        name = os.path.basename(rel)
        if name in by_folder[folder]:
            continue  # one source packaged in two targets (shared and static)
        by_folder[folder][name] = symbols(obj)

    failed, any_built = [], False
    for folder in checked:
        n = check(folder, by_folder)
        any_built |= n is not None
        if n:
            failed.append(folder)
    for folder in not_yet:
        n = check(folder, by_folder)
        any_built |= n is not None
        if n:
            print(f"{folder}: not yet layered (reported, not failed)")
    if not any_built:
        print("SKIP: no object files found for the folders given")
        return 77
    if failed:
        print("FAIL: call cycles in " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
