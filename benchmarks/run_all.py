"""`make bench`: every benchmark in turn, each printing its own figures; with `--base REV`, old and new alternating.

Speed is measured here and reported in the issues' notes, never asserted in the unit tests. The machine these
run on is often shared, and a figure taken minutes apart from its baseline compares two machines, not two
versions. `--base REV` checks REV out into a temporary git worktree and runs each benchmark there and here in
turn, `--rounds` times (base, new, base, new, ...), each under its own tree's code; figures printed as
`name  number` (bench_ui's) are summed up as median and best of the rounds per side, with new/base ratios.
A benchmark the base tree does not have runs on the new side only.

Usage: python benchmarks/run_all.py [--base REV] [--rounds N] [--only bench_ui.py ...] [-- ARGS for each]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BENCHMARKS = (
    "bench_sampling.py",
    "bench_container.py",
    "bench_gpm.py",
    "bench_xid.py",
    "bench_topology.py",
    "bench_simulated.py",
    "bench_diagnostics.py",
    "bench_record.py",
    "bench_store.py",
    "bench_export.py",
    "bench_export_load.py",
    "bench_prometheus.py",
    "bench_ui.py",
    "bench_stacks.py",
)
# A figure line: a name, spaces, a number (e.g. "cpu_pct      0.41 % of one core", "latency_p99_ms   12.5").
FIGURE = re.compile(r"^([a-z][a-z0-9_]*)\s+(-?[0-9]+(?:\.[0-9]+)?)\b")


def run_one(tree: Path, name: str, extra: list[str]) -> tuple[int, str]:
    """Runs `name` from `tree`'s own benchmarks/ with `tree` first on the import path and as the working dir."""
    # Both trees with their bytecode cached, as an installed gputui has it (bench_ui.py says why).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, str(tree / "benchmarks" / name), *extra],
        cwd=tree,
        env={**env, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def figures(output: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for line in output.splitlines() if (m := FIGURE.match(line))}


def alternate(base: Path, names: list[str], rounds: int, extra: list[str]) -> int:
    failed = []
    for name in names:
        print(f"== {name} (base {base.name} and this tree, alternating, {rounds} rounds)", flush=True)
        sides = [("base", base), ("new", ROOT)] if (base / "benchmarks" / name).exists() else [("new", ROOT)]
        seen: dict[str, dict[str, list[float]]] = {side: defaultdict(list) for side, _ in sides}
        for round_no in range(1, rounds + 1):
            for side, tree in sides:
                code, output = run_one(tree, name, extra)
                print(f"-- round {round_no}, {side}:\n{output.rstrip()}", flush=True)
                if code != 0:
                    failed.append(f"{name} ({side})")
                for key, value in figures(output).items():
                    seen[side][key].append(value)
        _summary(seen)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


def _summary(seen: dict[str, dict[str, list[float]]]) -> None:
    new = seen["new"]
    base = seen.get("base", {})
    for key, values in new.items():
        line = f"   {key:<12} new median {statistics.median(values):.3f} best {min(values):.3f}"
        if base.get(key):
            old_median = statistics.median(base[key])
            line += f"   base median {old_median:.3f} best {min(base[key]):.3f}"
            if old_median:
                line += f"   new/base {statistics.median(values) / old_median:.2f}"
        print(line, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="a git revision to measure against, alternating with this tree")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side with --base (default 3)")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, help="just these benchmarks")
    parser.add_argument("extra", nargs="*", help="arguments after -- go to every benchmark")
    args = parser.parse_args()
    names = list(args.only or BENCHMARKS)
    if args.base is None:
        failed = []
        for name in names:
            print(f"== {name}", flush=True)
            code, output = run_one(ROOT, name, args.extra)
            print(output.rstrip(), flush=True)
            if code != 0:
                failed.append(name)
        if failed:
            print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1 if failed else 0
    with tempfile.TemporaryDirectory(prefix="gputui-base-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base), args.base], cwd=ROOT, check=True)
        try:
            return alternate(base, names, args.rounds, args.extra)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, check=False)


if __name__ == "__main__":
    raise SystemExit(main())
