"""A fleet refresh against a real Prometheus holding 200 nodes x 8 GPUs: wall seconds end to end, and queries.

Issue 22 asks that `gputui --prometheus URL` refresh the whole fleet in at most 2 s with at most one instant
query per metric. The data are synthetic (SIMULATED, benchmarks/fleet_data.py: half the nodes gputui's series,
half dcgm-exporter's, 30 min at 15 s), backfilled into a TSDB with `promtool tsdb create-blocks-from openmetrics`
and cached under the temp dir, keyed by the generator's parameters; a real Prometheus (Debian's package) then
serves it. All the data sit in persisted blocks (a live server holds the last hours in memory), which makes the
figure a little pessimistic.

`refresh(poller)` is one refresh as the fleet view's sampling loop runs it (session/fleet_poll.py: poll_and_judge):
PrometheusPoller.poll() reads the fleet with gputui's own client (read_fleet: a few batched instant queries) and
runs each host's new reading through its own diagnostics engine, then the fleet rules judge every host's window.
The poller's clock walks through the stored data a scrape interval (15 s) per refresh, so each refresh brings
every host a reading it has not judged yet, as live; the first, untimed poll reads the last WARM_UP_S of history
through each host's engine (query_range), as the view does at start, so the timed refreshes judge full windows.
Requests are counted on the client. Without promtool or prometheus it prints why and exits 0 (skipped).

Run: .venv/bin/python benchmarks/bench_prometheus.py [--nodes N] [--rounds N]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from benchmarks.fleet_data import FleetParams, write_openmetrics
from gputui.session.fleet_poll import PrometheusPoller, judge_fleet
from gputui.sources.prometheus.client import PrometheusClient
from tests.sources.prometheus.prometheus_server import PrometheusMissing, binary, build_tsdb, prometheus_on_tsdb

QUERY_TIMEOUT_S = 10.0
WARM_UP_S = 300.0  # history read by the first poll: the windows the fleet rules judge are minutes long


class CountingClient(PrometheusClient):
    """gputui's client, counting its HTTP requests (read_fleet sends them from a few threads)."""

    def __init__(self, url: str) -> None:
        super().__init__(url, timeout=QUERY_TIMEOUT_S, env={})
        self.requests = 0
        self._lock = threading.Lock()

    def _get(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        with self._lock:
            self.requests += 1
        return super()._get(path, params)


@dataclasses.dataclass(frozen=True, slots=True)
class Refresh:
    """One timed refresh: wall seconds in all and in the fleet rules, requests made, hosts and GPUs read."""

    seconds: float
    rules_seconds: float
    requests: int
    hosts: int
    gpus: int


def data_clock(first: float, step_s: float) -> Iterator[float]:
    """first, first + step_s, ...: the poller's "now", a scrape interval further into the stored data each poll."""
    at = first
    while True:
        yield at
        at += step_s


def fleet_poller(url: str, first: float, step_s: float) -> tuple[PrometheusPoller, CountingClient]:
    client = CountingClient(url)
    ticks = data_clock(first, step_s)
    return PrometheusPoller(client, clock=lambda: next(ticks), warm_up_s=WARM_UP_S, step_s=step_s), client


def refresh(poller: PrometheusPoller, client: CountingClient) -> Refresh:
    """One fleet refresh as the fleet view runs it (poll_and_judge: poll, then the fleet rules), timed in two
    parts; RuntimeError when Prometheus failed, so a failure is never timed as a fast refresh."""
    before = client.requests
    start = time.perf_counter()
    states = poller.poll()
    polled = time.perf_counter()
    judge_fleet(states)
    done = time.perf_counter()
    if poller.error is not None:
        raise RuntimeError(f"the refresh failed: {poller.error}")
    reachable = [s for s in states if s.snapshot is not None]
    return Refresh(
        seconds=done - start,
        rules_seconds=done - polled,
        requests=client.requests - before,
        hosts=len(reachable),
        gpus=sum(len(s.snapshot.gpus) for s in reachable if s.snapshot is not None),
    )


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
    params = FleetParams(nodes=args.nodes)
    storage, end = cached_tsdb(params)
    if args.rounds + 1 > params.samples - WARM_UP_S / params.step_s:
        parser.error(f"--rounds: at most {params.samples - 1 - int(WARM_UP_S / params.step_s)} with this data")
    age_s = max(0, int(time.time()) - end)
    with prometheus_on_tsdb(storage) as prom:
        # The last poll reads the data's last sample; the first (untimed: it maps the blocks in and reads the
        # warm-up history) is args.rounds scrape intervals before it.
        poller, client = fleet_poller(prom.url, end - args.rounds * params.step_s, params.step_s)
        warm_up = refresh(poller, client)
        timed = [refresh(poller, client) for _ in range(args.rounds)]
    times = [r.seconds for r in timed]
    rules = [r.rules_seconds for r in timed]
    queries = {r.requests for r in timed}
    last = timed[-1]
    print(
        f"fleet: {args.nodes} nodes x 8 GPUs ({last.hosts} hosts, {last.gpus} GPUs answering), "
        f"data {age_s / 60:.0f} min old; warm-up poll {warm_up.seconds:.1f} s, {warm_up.requests} requests"
    )
    print(f"refresh_median  {statistics.median(times):.3f} s per refresh")
    print(f"refresh_max     {max(times):.3f} s per refresh ({args.rounds} refreshes)")
    print(f"fleet_rules     {statistics.median(rules):.3f} s per refresh of it (median): the fleet findings")
    print(f"queries         {max(queries)} per refresh (counted on the client; one per batch of metric names)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
