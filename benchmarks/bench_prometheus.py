"""A fleet refresh against a real Prometheus holding 200 nodes x 8 GPUs: wall seconds end to end, and queries.

Issue 22 asks that `gputui --prometheus URL` refresh the whole fleet in at most 2 s with at most one instant
query per metric. The data are synthetic (SIMULATED, benchmarks/fleet_data.py: half the nodes gputui's series,
half dcgm-exporter's, 30 min at 15 s), backfilled into a TSDB with `promtool tsdb create-blocks-from openmetrics`
and cached under the temp dir, keyed by the generator's parameters; a real Prometheus (Debian's package) then
serves it. The data of a cached TSDB end when it was built, so Prometheus runs with a lookback that reaches them:
an instant query at "now" finds every series' last sample as if just scraped. All the data sit in persisted blocks
(a live server holds the last hours in memory), which makes the figure a little pessimistic.

`refresh(url)` is one fleet refresh: one instant query per metric name gputui reads (gputui/metric_schema.py),
each answer read whole and decoded. Without promtool or prometheus it prints why and exits 0 (skipped).

Run: .venv/bin/python benchmarks/bench_prometheus.py [--nodes N] [--rounds N]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from benchmarks.fleet_data import FleetParams, write_openmetrics
from gputui import metric_schema
from tests.fleet.prometheus_server import PrometheusMissing, binary, build_tsdb, prometheus_on_tsdb

QUERY_TIMEOUT_S = 10.0
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def metric_names() -> tuple[str, ...]:
    """Every metric name gputui reads: the field tables and the single names beside them, in schema order."""
    names: list[str] = []
    for value in vars(metric_schema).values():
        if isinstance(value, tuple) and value and all(isinstance(f, metric_schema.MetricField) for f in value):
            names += [f.name for f in value]
    singles = [v for k, v in vars(metric_schema).items() if k.endswith("_METRIC") and isinstance(v, str)]
    names += singles + list(metric_schema.LOAD_METRICS)
    return tuple(dict.fromkeys(names))


QUERIES = metric_names()


def refresh(url: str) -> None:
    """One fleet refresh: an instant query per metric for the whole fleet (never one per host), decoded."""
    for name in QUERIES:
        query = urllib.parse.urlencode({"query": name})
        with _OPENER.open(f"{url}/api/v1/query?{query}", timeout=QUERY_TIMEOUT_S) as reply:
            data = json.loads(reply.read())
        if data.get("status") != "success":
            raise RuntimeError(f"{name}: {data}")


def cached_tsdb(params: FleetParams) -> tuple[Path, int]:
    """The TSDB for `params` (built once, then reused) and the unix time its data end."""
    root = Path(tempfile.gettempdir()) / f"gputui-bench-tsdb-{params.key()}"
    done = root / "end"
    if done.exists():
        return root / "data", int(done.read_text())
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    params = dataclasses.replace(params, end=int(time.time()))
    start = time.monotonic()
    source = root / "fleet.om"
    with source.open("w") as out:
        series, samples = write_openmetrics(out, params)
    written = time.monotonic()
    build_tsdb(source, root / "data")
    source.unlink()
    done.write_text(str(params.end))
    print(
        f"built the TSDB: {series} series, {samples} samples; generated in {written - start:.1f} s, "
        f"promtool {time.monotonic() - written:.1f} s ({root})",
        flush=True,
    )
    return root / "data", params.end


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=200, help="nodes of 8 GPUs (default 200)")
    parser.add_argument("--rounds", type=int, default=10, help="refreshes to time after one warm-up (default 10)")
    args = parser.parse_args()
    if args.rounds < 1 or args.nodes < 1:
        parser.error("--nodes and --rounds must be at least 1")
    try:
        binary("prometheus")
        binary("promtool")
    except PrometheusMissing as exc:
        print(f"bench_prometheus: skipped: {exc}")
        return 0
    storage, end = cached_tsdb(FleetParams(nodes=args.nodes))
    age_s = max(0, int(time.time()) - end)
    with prometheus_on_tsdb(storage, lookback_delta=f"{age_s + 300}s") as prom:
        refresh(prom.url)  # warm-up: the first query maps the blocks in
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            refresh(prom.url)
            times.append(time.perf_counter() - start)
        series = len(prom.query("DCGM_FI_DEV_GPU_UTIL"))
    print(f"fleet: {args.nodes} nodes x 8 GPUs ({series} GPUs answering), data {age_s / 60:.0f} min old")
    print(f"refresh_median  {statistics.median(times):.3f} s per refresh")
    print(f"refresh_max     {max(times):.3f} s per refresh ({args.rounds} refreshes)")
    print(f"queries         {len(QUERIES)} per refresh (one per metric)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
