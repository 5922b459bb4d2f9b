#!/usr/bin/env python3
# The smoke test of scripts/bench-disk (ctest bench-disk-quick): runs it with
# --quick and checks that it completed, printed one table row per target and
# workload, and wrote a figure for each of them to its JSON, with the
# daemon's zeroing report for the plugin targets.  No speed is asserted.
#   bench-disk-check.py SCRIPT BUILD_DIR TARGETS JSON
import json
import os
import shutil
import subprocess
import sys

WORKLOADS = ("fresh-seq", "fresh-rand4k", "over-seq", "over-rand4k", "read-seq", "read-rand4k")


def fail(msg):
    print(f"bench-disk-check: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    script, build_dir, targets, json_path = sys.argv[1:5]
    keys = targets.split(",")
    r = subprocess.run([sys.executable, script, "--quick", "--build-dir", build_dir,
                        "--targets", targets, "--json", json_path],
                       capture_output=True, text=True, check=False)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if r.returncode == 77:
        sys.exit(77)
    if r.returncode != 0:
        fail(f"bench-disk exited with status {r.returncode}")
    lines = r.stdout.splitlines()
    if not any(line.startswith("workload ") and "p99 us" in line for line in lines):
        fail("no table header in the output")
    for w in WORKLOADS:
        for k in keys:
            if not any(line.startswith(w + " ") and f"({k}) " in line for line in lines):
                fail(f"no table row for workload {w}, target ({k})")
    with open(json_path, encoding="utf-8") as f:
        doc = json.load(f)
    rows = {(row["target"], row["workload"]): row for row in doc["rows"]}
    # the machine's floor lines (built beside the bench): what the figures are read against
    meta = doc["meta"]
    ft = meta.get("first_touch") or {}
    if "after 300 ms asleep" not in ft.get("line", "") or "idle_us" not in ft:
        fail(f"no first-touch figures with their after-sleep pass: {ft!r}")
    ws = (meta.get("wake_stall") or {}).get("runs") or []
    if len(ws) != 2 or not all("max_ms" in run for run in ws):
        fail(f"no wake-stall runs (without and with a mapping): {ws!r}")
    # what docs/PERFORMANCE.md quotes beside every figure (scripts/perf-table)
    for key in ("date", "commit", "cpu", "command"):
        if not meta.get(key):
            fail(f"meta has no {key}")
    for t in doc.get("targets") or fail("no targets"):
        if not {"name", "value", "threshold", "met", "check"} <= set(t):
            fail(f"a target without name, value, threshold, met or check: {t}")
    if not isinstance(doc["meta"].get("host_caveats"), list):
        fail("no reading of the floor lines (meta.host_caveats)")
    for w in WORKLOADS:
        for k in keys:
            row = rows.get((k, w))
            if row is None:
                fail(f"no JSON row for workload {w}, target ({k})")
            if row["bytes"] <= 0 or row["bw_bytes"] <= 0 or not row["lat_p99_ns"]:
                fail(f"JSON row {k}/{w} has no figures: {row}")
            if k in "ab" and ("zero_wait_s" not in row or "daemon_during" not in row):
                fail(f"JSON row {k}/{w} lacks the daemon's zeroing report")
            if k in "ab" and row["daemon_before"]["dirty"] != 0:
                fail(f"({k}) {w} started before zeroing finished: {row['daemon_before']}")
    # with gnuplot, bench-disk draws the run beside its JSON (scripts/bench-disk-plot)
    png = os.path.splitext(json_path)[0] + ".png"
    if shutil.which("gnuplot"):
        try:
            with open(png, "rb") as f:
                magic = f.read(8)
        except OSError as e:
            fail(f"no picture of the run: {e}")
        if magic != b"\x89PNG\r\n\x1a\n":
            fail(f"{png} is not a PNG")
    print(f"bench-disk-check: OK: {len(keys)} targets x {len(WORKLOADS)} workloads"
          + (f", {png}" if shutil.which("gnuplot") else ", no picture (no gnuplot)"))


if __name__ == "__main__":
    main()
