#!/usr/bin/env python3
"""Summarise bench/compare.sh's results as markdown.

    python3 bench/compare_table.py results.jsonl [machine.txt]

Every figure is the median over the repetitions of a measurement (runs
that failed, counted errors or completed nothing are listed, and left
out). Ratios are
keeper / ZooKeeper: above 1 is better for throughput, below 1 is better
for latency, CPU, memory and time. The last section checks the targets of
issue 8.
"""

import json
import statistics
import sys
from collections import defaultdict

OPS = ["get", "exists", "set", "create", "mixed"]
SETUPS = ["standalone", "ensemble"]


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


class Results:
    def __init__(self, rows):
        self.groups = defaultdict(list)
        self.failed = []
        for r in rows:
            if r.get("op") in OPS + ["watch"] and not r.get("error") and not r.get("ops"):
                r["error"] = "no request completed in the measured interval"
            if r.get("error") or r.get("errors"):
                self.failed.append(r)
                if r.get("error"):
                    continue
            key = (r.get("setup"), r.get("server"), r.get("op"), shape(r), r.get("phase"))
            self.groups[key].append(r)

    def med(self, setup, server, op, shp=None, field="ops_per_sec", phase=None):
        rs = self.groups.get((setup, server, op, shp, phase), [])
        xs = [get(r, field) for r in rs if not r.get("errors")]
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    def runs(self, setup, server, op, shp=None, phase=None):
        return len(self.groups.get((setup, server, op, shp, phase), []))


def shape(r):
    if r.get("op") in OPS:
        return f"{r.get('clients')}x{r.get('inflight')}"
    return None


def get(r, field):
    v = r
    for part in field.split("."):
        if not isinstance(v, dict):
            return None
        v = v.get(part)
    return v


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt(v, unit=""):
    if v is None:
        return "–"
    if isinstance(v, float) and abs(v) < 10:
        s = f"{v:.2f}"
    elif isinstance(v, float) and abs(v) < 100:
        s = f"{v:.1f}"
    else:
        s = f"{v:,.0f}"
    return s + unit


def fratio(v):
    return "–" if v is None else f"{v:.2f}×"


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def load_tables(res, setup):
    null_setup = "standalone"  # the tool's ceiling is measured standalone only
    lat = []
    own_null = setup != null_setup and any(res.runs(setup, "null", op, "1x1") for op in OPS)
    for op in OPS:
        k50, z50 = res.med(setup, "keeper", op, "1x1", "p50_us"), res.med(setup, "zookeeper", op, "1x1", "p50_us")
        k99, z99 = res.med(setup, "keeper", op, "1x1", "p99_us"), res.med(setup, "zookeeper", op, "1x1", "p99_us")
        # The floor: the setup's own null (the null ensemble's hops and
        # syncs) where it ran, else the null server's round trip.
        floor = setup if own_null else null_setup
        n50, n99 = res.med(floor, "null", op, "1x1", "p50_us"), res.med(floor, "null", op, "1x1", "p99_us")
        lat.append([op, fmt(k50), fmt(z50), fratio(ratio(k50, z50)), fmt(k99), fmt(z99), fratio(ratio(k99, z99)),
                    f"{fmt(n50)} / {fmt(n99)}",
                    f"{res.runs(setup, 'keeper', op, '1x1')}/{res.runs(setup, 'zookeeper', op, '1x1')}"])
    thr = []
    for op in OPS:
        k, z = res.med(setup, "keeper", op, "16x16"), res.med(setup, "zookeeper", op, "16x16")
        n = res.med(null_setup, "null", op, "16x16")
        kc = res.med(setup, "keeper", op, "16x16", "server_cpu_us_per_op")
        zc = res.med(setup, "zookeeper", op, "16x16", "server_cpu_us_per_op")
        k99, z99 = res.med(setup, "keeper", op, "16x16", "p99_us"), res.med(setup, "zookeeper", op, "16x16", "p99_us")
        thr.append([op, fmt(k), fmt(z), fratio(ratio(k, z)), fmt(n), fratio(ratio(k, n)), fmt(kc), fmt(zc),
                    fratio(ratio(kc, zc)), fmt(k99), fmt(z99)])
    what = "server CPU µs/op" if setup == "standalone" else "CPU µs/op, 3 members summed"
    return "\n\n".join([
        f"### {setup}: latency, 1 client × 1 in flight (µs)",
        table(["op", "keeper p50", "ZK p50", "k/ZK", "keeper p99", "ZK p99", "k/ZK",
               "null ensemble p50 / p99 (floor)" if own_null else "null p50 / p99 (floor)", "runs k/ZK"], lat),
        f"### {setup}: throughput, 16 clients × 16 in flight (ops/s)",
        table(["op", "keeper", "ZK", "k/ZK", "null (ceiling)", "k/null", f"keeper {what}", f"ZK {what}", "k/ZK",
               "keeper p99 µs", "ZK p99 µs"], thr),
    ])


def nosync_table(res):
    """The ensemble's 1×1 writes with forceSync=no on every member, beside
    the same writes synced: how much of each server's p50 is its path and
    how much the three members' fdatasyncs on the one disk."""
    rows = []
    for op in ("set", "create"):
        k50, z50 = res.med("nosync", "keeper", op, "1x1", "p50_us"), res.med("nosync", "zookeeper", op, "1x1", "p50_us")
        if k50 is None and z50 is None:
            continue
        k99, z99 = res.med("nosync", "keeper", op, "1x1", "p99_us"), res.med("nosync", "zookeeper", op, "1x1", "p99_us")
        ks, zs = res.med("ensemble", "keeper", op, "1x1", "p50_us"), res.med("ensemble", "zookeeper", op, "1x1", "p50_us")
        rows.append([op, fmt(k50), fmt(z50), fratio(ratio(k50, z50)), fmt(k99), fmt(z99), fratio(ratio(k99, z99)),
                     fmt(None if None in (ks, k50) else ks - k50), fmt(None if None in (zs, z50) else zs - z50)])
    if not rows:
        return ""
    return ("### ensemble without the disk: forceSync=no on every member, 1 client × 1 in flight (µs)\n\n" +
            table(["op", "keeper p50", "ZK p50", "k/ZK", "keeper p99", "ZK p99", "k/ZK",
                   "keeper: synced p50 − this", "ZK: synced p50 − this"], rows))


def watch_table(res):
    rows = []
    for setup in SETUPS:
        k50, z50 = res.med(setup, "keeper", "watch", None, "p50_us"), res.med(setup, "zookeeper", "watch", None, "p50_us")
        if k50 is None and z50 is None:
            continue
        k99, z99 = res.med(setup, "keeper", "watch", None, "p99_us"), res.med(setup, "zookeeper", "watch", None, "p99_us")
        ks, zs = res.med(setup, "keeper", "watch", None, "set_p50_us"), res.med(setup, "zookeeper", "watch", None, "set_p50_us")
        kc = res.med(setup, "keeper", "watch", None, "server_cpu_us_per_op")
        zc = res.med(setup, "zookeeper", "watch", None, "server_cpu_us_per_op")
        w = next((r.get("watchers") for r in res.groups.get((setup, "keeper", "watch", None, None), [])), "?")
        rows.append([setup, w, fmt(ms(k50)), fmt(ms(z50)), fratio(ratio(k50, z50)), fmt(ms(k99)), fmt(ms(z99)),
                     fratio(ratio(k99, z99)), fmt(ks), fmt(zs), fmt(ms(kc)), fmt(ms(zc))])
    if not rows:
        return ""
    return "### watch fan-out: time from the set to the last notification (ms)\n\n" + table(
        ["setup", "watchers", "keeper p50", "ZK p50", "k/ZK", "keeper p99", "ZK p99", "k/ZK", "keeper set p50 µs",
         "ZK set p50 µs", "keeper CPU ms/round", "ZK CPU ms/round"], rows)


def ms(us):
    return None if us is None else us / 1000


def mib(kib):
    return None if kib is None else kib / 1024


def resource_rows(res):
    """Rows of (label, keeper, zookeeper, formatter)."""
    def m(server, op, field, phase):
        return res.med("resources", server, op, None, field, phase)

    def both(op, field, phase):
        return m("keeper", op, field, phase), m("zookeeper", op, field, phase)

    def growth(server):
        rss, rss0 = m(server, "memory", "rss_kib", "filled"), m(server, "memory", "rss_empty_kib", "filled")
        n = m(server, "memory", "znodes", "filled")
        return None if None in (rss, rss0, n) or n == 0 else (rss - rss0) * 1024 / n

    def per_node(server):
        b, n = m(server, "snapshot", "snapshot_bytes", None), m(server, "snapshot", "snapshot_nodes", None)
        return None if None in (b, n) or n == 0 else b / n

    n = m("keeper", "memory", "znodes", "filled") or m("zookeeper", "memory", "znodes", "filled")
    nz = f"{n:,.0f}" if n else "N"
    rows = [
        ("start, empty data dir → first read (s)", *both("ready", "ready_sec", "start-empty")),
        (f"restart with {nz} znodes → first read (s)", *both("ready", "ready_sec", "restart")),
        ("CPU used until that read (s)", *both("ready", "server_cpu_seconds", "restart")),
        (f"creating {nz} znodes, 16 × 16 (creates/s)", *both("fill", "ops_per_sec", "fill")),
        (f"RSS with {nz} znodes (MiB)", *map(mib, both("memory", "rss_kib", "filled"))),
        ("peak RSS, VmHWM (MiB)", *map(mib, both("memory", "hwm_kib", "filled"))),
        ("RSS growth per znode (B)", growth("keeper"), growth("zookeeper")),
        ("RSS after restart (MiB)", *map(mib, both("memory", "rss_kib", "restarted"))),
        ("newest snapshot (MiB)", *map(lambda b: None if b is None else b / 2**20, both("snapshot", "snapshot_bytes", None))),
        ("  its znodes", *both("snapshot", "snapshot_nodes", None)),
        ("  snapshot bytes per znode", per_node("keeper"), per_node("zookeeper")),
        ("data directory on disk (MiB)", *map(lambda b: None if b is None else b / 2**20, both("snapshot", "datadir_bytes", None))),
    ]
    return rows


def resources_table(res):
    rows = [[label, fmt(k), fmt(z), fratio(ratio(k, z))] for label, k, z in resource_rows(res)]
    if all(r[1] == "–" and r[2] == "–" for r in rows):
        return ""
    return "### resources, standalone\n\n" + table(["", "keeper", "ZK", "k/ZK"], rows)


def disk_table(res):
    rows = []
    for mode in ("append", "overwrite"):
        rows.append([mode, fmt(res.med("disk", "disk", None, None, f"{mode}.p50_us")),
                     fmt(res.med("disk", "disk", None, None, f"{mode}.p99_us")),
                     fmt(res.med("disk", "disk", None, None, f"{mode}.ops_per_sec"))])
    out = "### the disk: 4 KiB write + fdatasync\n\n" + table(["mode", "p50 µs", "p99 µs", "ops/s"], rows)
    m = lambda field: res.med("machine", "stalls", None, None, field)
    if m("both.stalls_per_sec") is not None:
        # keeper bench stalls: stops of the whole machine, seen by every
        # spinner at once (BENCHMARKS.md, "The 100 ms stalls are the whole
        # machine stopping").
        out += (f"\n\nwhole-machine stops (`keeper bench stalls`: {fmt(m('spinners'))} spinning threads, "
                f"{fmt(m('writers'))} writers × {fmt(m('rate_per_writer'))} fdatasync/s): spinners alone {fmt(m('spin.stalls_per_sec'))}/s, writers alone "
                f"sync p99 {fmt(m('sync.sync_p99_us'))} µs, both "
                f"{fmt(m('both.stalls_per_sec'))}/s, {fmt(m('both.stalled_ms_per_sec'))} ms stopped a second, "
                f"median interval {fmt(m('both.stall_interval_p50_ms'))} ms (sync p99 {fmt(m('both.sync_p99_us'))} µs)")
    return out


def targets(res):
    out = []

    def check(name, ok, detail):
        out.append([name, "–" if ok is None else ("met" if ok else "**missed**"), detail])

    for setup in SETUPS:
        for op in ("set", "create"):
            r = ratio(res.med(setup, "keeper", op, "16x16"), res.med(setup, "zookeeper", op, "16x16"))
            check(f"{setup} {op} 16×16 ≥ 2.0× ZK", None if r is None else r >= 2.0, fratio(r))
        for op in ("get", "exists"):
            k = res.med(setup, "keeper", op, "16x16")
            r = ratio(k, res.med(setup, "zookeeper", op, "16x16"))
            n = ratio(k, res.med("standalone", "null", op, "16x16"))
            ok = None if r is None else (r >= 1.5 or (n is not None and n >= 0.9))
            check(f"{setup} {op} 16×16 ≥ 1.5× ZK or ≥ 90% of null", ok, f"{fratio(r)} ZK, {fratio(n)} null")
        for op in ("get", "set"):
            r = ratio(res.med(setup, "keeper", op, "16x16", "server_cpu_us_per_op"),
                      res.med(setup, "zookeeper", op, "16x16", "server_cpu_us_per_op"))
            check(f"{setup} {op} 16×16 CPU/op ≤ 1/3 of ZK", None if r is None else r <= 1 / 3, fratio(r))
        missed, known = [], 0
        for op in OPS:
            for q in ("p50_us", "p99_us"):
                k, z = res.med(setup, "keeper", op, "1x1", q), res.med(setup, "zookeeper", op, "1x1", q)
                if k is None or z is None:
                    continue
                known += 1
                if k >= z:
                    missed.append(f"{op} {q[:3]} {k:.0f} vs {z:.0f}")
        check(f"{setup} 1×1 p50 and p99 below ZK for every op", None if not known else not missed,
              "; ".join(missed) or f"{known} of {known} below")
    k, n = res.med("standalone", "keeper", "get", "1x1", "p50_us"), res.med("standalone", "null", "get", "1x1", "p50_us")
    r = ratio(k, n)
    check("standalone get 1×1 p50 ≤ 1.5× null floor", None if r is None else r <= 1.5, f"{fmt(k)} vs {fmt(n)} µs: {fratio(r)}")
    k = res.med("standalone", "keeper", "set", "1x1", "p50_us")
    f = res.med("disk", "disk", None, None, "overwrite.p50_us")
    check("standalone set 1×1 p50 ≤ fsync p50 (preallocated) + 150 µs", None if None in (k, f) else k <= f + 150,
          f"{fmt(k)} vs {fmt(f)} + 150 µs")
    rows = {label: (k, z) for label, k, z in resource_rows(res)}
    mem = next((v for label, v in rows.items() if label.startswith("RSS with")), (None, None))
    r = ratio(*mem)
    check("RSS with the filled tree ≤ 1/2 of ZK", None if r is None else r <= 0.5, fratio(r))
    rst = next((v for label, v in rows.items() if label.startswith("restart with")), (None, None))
    r = ratio(*rst)
    check("restart to first served read ≤ 1/3 of ZK", None if r is None else r <= 1 / 3, fratio(r))
    return "### targets (issue 8)\n\n" + table(["target", "", "keeper vs ZK"], out)


def failures(res):
    if not res.failed:
        return ""
    lines = ["### failed runs or runs with errors", ""]
    for r in res.failed:
        what = r.get("error") or f"{r.get('errors')} errors {r.get('errors_by_code')}"
        lines.append(f"- {r.get('setup')} {r.get('server')} {r.get('op')} {shape(r) or ''}: {str(what)[:300]}")
    return "\n".join(lines)


def main():
    res = Results(load(sys.argv[1]))
    parts = []
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            parts.append("```\n" + f.read().strip() + "\n```")
    parts.append(disk_table(res))
    for setup in SETUPS:
        if any(k[0] == setup for k in res.groups):
            parts.append(load_tables(res, setup))
    parts += [nosync_table(res), watch_table(res), resources_table(res), targets(res), failures(res)]
    print("\n\n".join(p for p in parts if p))


if __name__ == "__main__":
    main()
