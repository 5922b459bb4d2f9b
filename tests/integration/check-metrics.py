#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check a `pmemzctl metrics` exposition against `pmemzctl --json regions`
and `--json status` taken at the same quiescent moment.

The exposition is parsed with the Prometheus reference parser
(python3-prometheus-client); a format error fails the check.  Exit 0 when
every value matches, 1 with the differences, 77 when the parser is missing.

usage: check-metrics.py METRICS REGIONS_JSON STATUS_JSON
           [--connections N] [--waits REGION=N ...] [--min-wait-sum REGION=SECONDS ...]
           [--usage REGION=FILE ...] [--disks REGION=FILE ...]
"""
import argparse
import json
import math
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("SKIP: python3 module prometheus_client (Debian: python3-prometheus-client) missing")
    sys.exit(77)

# The contract of docs/OPERATIONS.md: family name (counters without _total,
# as the parser names them) -> type.
FAMILIES = {
    "pmemzerod_extents": "gauge",
    "pmemzerod_zeroed_bytes": "counter",
    "pmemzerod_allocations": "counter",
    "pmemzerod_commits": "counter",
    "pmemzerod_frees": "counter",
    "pmemzerod_moves": "counter",
    "pmemzerod_allocate_wait_seconds": "histogram",
    "pmemzerod_waiters": "gauge",
    "pmemzerod_connections": "gauge",
    "pmemzerod_region_up": "gauge",
    "pmemzerod_bad_blocks": "gauge",
    "pmemzerod_zero_fences": "counter",
    "pmemzerod_region_numa_node": "gauge",
    "pmemzerod_uid_leased_bytes": "gauge",
    "pmemzerod_uid_committed_bytes": "gauge",
    "pmemzerod_uid_tags": "gauge",
    "pmemzerod_uid_waiters": "gauge",
    "pmemzerod_uid_rezeroed_bytes": "counter",
    "pmemzerod_tenant_leased_bytes": "gauge",
    "pmemzerod_tenant_committed_bytes": "gauge",
    "pmemzerod_tenant_tags": "gauge",
    "pmemzerod_tenant_waiters": "gauge",
    "pmemzerod_tenant_rezeroed_bytes": "counter",
    "pmemzerod_disk_mapped_bytes": "gauge",
    "pmemzerod_disk_ahead_bytes": "gauge",
}
# Shown to admins only (`pmemzctl status --json` then has heap_in_use).
ADMIN_FAMILIES = {
    "pmemzerod_heap_in_use_bytes": "gauge",
    "pmemzerod_heap_free_bytes": "gauge",
    "pmemzerod_heap_trims": "counter",
}
# per-uid sample name -> key of a uid's row in `pmemzctl --json usage REGION`
UID_KEYS = {
    "pmemzerod_uid_leased_bytes": "leased",
    "pmemzerod_uid_committed_bytes": "committed",
    "pmemzerod_uid_tags": "tags",
    "pmemzerod_uid_waiters": "waiters",
    "pmemzerod_uid_rezeroed_bytes_total": "rezeroed",
}
# per-tenant sample name -> key of a row (tenant = cgroup: one per cgroup)
TENANT_KEYS = {
    "pmemzerod_tenant_leased_bytes": "leased",
    "pmemzerod_tenant_committed_bytes": "committed",
    "pmemzerod_tenant_tags": "tags",
    "pmemzerod_tenant_waiters": "waiters",
    "pmemzerod_tenant_rezeroed_bytes_total": "rezeroed",
}
# per-disk sample name -> key of a disk in `pmemzctl --json disks REGION`
DISK_KEYS = {
    "pmemzerod_disk_mapped_bytes": "allocated",
    "pmemzerod_disk_ahead_bytes": "ahead",
}
STATES = ("zeroed", "dirty", "leased", "committed", "bad")
# sample name -> key of the region in `pmemzctl --json status`
STATUS_KEYS = {
    "pmemzerod_zeroed_bytes_total": "bytes_zeroed",
    "pmemzerod_allocations_total": "allocations",
    "pmemzerod_commits_total": "commits",
    "pmemzerod_frees_total": "frees",
    "pmemzerod_waiters": "waiters",
}

errors = []


def check(cond, msg):
    if not cond:
        errors.append(msg)


def kv_args(items, conv):
    out = {}
    for item in items or []:
        k, _, v = item.partition("=")
        out[k] = conv(v)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("metrics")
    ap.add_argument("regions_json")
    ap.add_argument("status_json")
    ap.add_argument("--connections", type=int)
    ap.add_argument("--waits", action="append")
    ap.add_argument("--min-wait-sum", action="append")
    ap.add_argument("--usage", action="append",
                    help="REGION=FILE: `pmemzctl --json usage REGION` at the same moment")
    ap.add_argument("--disks", action="append",
                    help="REGION=FILE: `pmemzctl --json disks REGION` at the same moment")
    a = ap.parse_args()

    with open(a.metrics, encoding="utf-8") as f:
        text = f.read()
    with open(a.regions_json, encoding="utf-8") as f:
        regions = {r["name"]: r for r in json.load(f)["regions"]}
    with open(a.status_json, encoding="utf-8") as f:
        status = json.load(f)
    status_regions = {r["name"]: r for r in status["regions"]}
    waits = kv_args(a.waits, int)
    min_wait_sum = kv_args(a.min_wait_sum, float)

    families = {fam.name: fam for fam in text_string_to_metric_families(text)}
    contract = dict(FAMILIES)
    if "heap_in_use" in status:
        contract.update(ADMIN_FAMILIES)
    check(set(families) == set(contract),
          f"families {sorted(families)} != contract {sorted(contract)}")
    for name, typ in contract.items():
        fam = families.get(name)
        if fam:
            check(fam.type == typ, f"{name}: type {fam.type}, want {typ}")
            check(bool(fam.documentation), f"{name}: no HELP text")

    # sample name -> {(region, other labels...): value}
    samples = {}
    for fam in families.values():
        for s in fam.samples:
            labels = dict(s.labels)
            region = labels.pop("region", None)
            key = (region,) + tuple(sorted(labels.items()))
            samples.setdefault(s.name, {})
            check(key not in samples[s.name], f"{s.name}{s.labels}: duplicate sample")
            samples[s.name][key] = s.value

    def get(name, region, **labels):
        return samples.get(name, {}).get((region,) + tuple(sorted(labels.items())))

    for name in ("pmemzerod_extents", "pmemzerod_zeroed_bytes_total", "pmemzerod_region_up"):
        got = {k[0] for k in samples.get(name, {})}
        check(got == set(regions), f"{name}: regions {sorted(got)} != {sorted(regions)}")

    for rname, r in regions.items():
        for state in STATES:
            v = get("pmemzerod_extents", rname, state=state)
            check(v == r[state], f"{rname}: extents{{state={state}}} = {v}, regions says {r[state]}")
        check(sum(get("pmemzerod_extents", rname, state=s) or 0 for s in STATES) == r["extents"],
              f"{rname}: extents do not add up to {r['extents']}")
        v = get("pmemzerod_bad_blocks", rname)
        check(v == r["bad"], f"{rname}: bad_blocks = {v}, regions says {r['bad']}")
        v = get("pmemzerod_region_up", rname)
        check(v == 1, f"{rname}: region_up = {v}")

        st = status_regions.get(rname)
        check(st is not None, f"{rname}: not in status")
        for sname, key in STATUS_KEYS.items():
            v = get(sname, rname)
            want = st[key] if st else None
            check(v == want, f"{rname}: {sname} = {v}, status says {want}")

        # The histogram: cumulative buckets ending in +Inf == count.
        buckets = sorted(
            (float(dict(k[1:])["le"]), v)
            for k, v in samples.get("pmemzerod_allocate_wait_seconds_bucket", {}).items()
            if k[0] == rname)
        count = get("pmemzerod_allocate_wait_seconds_count", rname)
        total = get("pmemzerod_allocate_wait_seconds_sum", rname)
        check(len(buckets) > 1 and math.isinf(buckets[-1][0]),
              f"{rname}: histogram has no +Inf bucket: {buckets}")
        check(all(buckets[i][1] <= buckets[i + 1][1] for i in range(len(buckets) - 1)),
              f"{rname}: histogram buckets not cumulative: {buckets}")
        if buckets:
            check(buckets[-1][1] == count, f"{rname}: +Inf bucket {buckets[-1][1]} != count {count}")
        want = waits.get(rname, 0)
        check(count == want, f"{rname}: allocate_wait_seconds_count = {count}, want {want}")
        if rname in min_wait_sum:
            check(total is not None and total >= min_wait_sum[rname],
                  f"{rname}: allocate_wait_seconds_sum = {total}, want >= {min_wait_sum[rname]}")
            # The wait lies above the bucket that holds min_wait_sum's worth of time.
            below = [v for le, v in buckets if le < min_wait_sum[rname]]
            check(not below or below[-1] == 0,
                  f"{rname}: waits counted below {min_wait_sum[rname]} s: {buckets}")
        elif want == 0:
            check(total == 0, f"{rname}: allocate_wait_seconds_sum = {total} without waits")

    for rname, path in kv_args(a.usage, str).items():
        with open(path, encoding="utf-8") as f:
            usage_rows = json.load(f)["uids"]
        # The uid families sum a uid's rows (tenant = cgroup has one per cgroup).
        rows = {}
        for u in usage_rows:
            acc = rows.setdefault(str(u["uid"]), {k: 0 for k in UID_KEYS.values()})
            for k in UID_KEYS.values():
                acc[k] += u[k]
        check(rows, f"{rname}: usage has no uid")
        for sname, key in UID_KEYS.items():
            got = {dict(k[1:])["uid"]: v for k, v in samples.get(sname, {}).items()
                   if k[0] == rname}
            check(set(got) == set(rows), f"{rname}: {sname} uids {sorted(got)} != {sorted(rows)}")
            for uid, row in rows.items():
                check(got.get(uid) == row[key],
                      f"{rname}: {sname}{{uid={uid}}} = {got.get(uid)}, usage says {row[key]}")
        tenants = {}
        for u in usage_rows:
            t = u.get("tenant", "-")
            tenants[f"uid:{u['uid']}" if t == "-" else t] = u
        for sname, key in TENANT_KEYS.items():
            got = {dict(k[1:])["tenant"]: v for k, v in samples.get(sname, {}).items()
                   if k[0] == rname}
            check(set(got) == set(tenants),
                  f"{rname}: {sname} tenants {sorted(got)} != {sorted(tenants)}")
            for t, row in tenants.items():
                check(got.get(t) == row[key],
                      f"{rname}: {sname}{{tenant={t}}} = {got.get(t)}, usage says {row[key]}")

    for rname, path in kv_args(a.disks, str).items():
        with open(path, encoding="utf-8") as f:
            disks = {(str(d["uid"]), d["name"]): d for d in json.load(f)["disks"]}
        for sname, key in DISK_KEYS.items():
            got = {(dict(k[1:])["uid"], dict(k[1:])["disk"]): v
                   for k, v in samples.get(sname, {}).items() if k[0] == rname}
            check(set(got) == set(disks),
                  f"{rname}: {sname} disks {sorted(got)} != {sorted(disks)}")
            for d, row in disks.items():
                check(got.get(d) == row[key],
                      f"{rname}: {sname}{{disk={d}}} = {got.get(d)}, disks says {row[key]}")

    v = get("pmemzerod_connections", None)
    check(v == status["connections"], f"connections = {v}, status says {status['connections']}")
    if a.connections is not None:
        check(v == a.connections, f"connections = {v}, want {a.connections}")

    # The heap's values are not checked: they move between the two calls,
    # and a sanitizer build's daemon has no glibc heap (all three are 0).
    # unit-server and unit-heap check them.

    for e in errors:
        print("FAIL:", e)
    if not errors:
        n = sum(len(v) for v in samples.values())
        print(f"ok: {len(families)} families, {n} samples, {len(regions)} regions match")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
