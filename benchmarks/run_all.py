"""`make bench`: every benchmark in turn, each printing its own figures.

Speed is measured here and reported in the issues' notes, never asserted in the unit tests. The machine these
run on is often shared: run twice and quote medians, not single runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = (
    "bench_sampling.py",
    "bench_container.py",
    "bench_gpm.py",
    "bench_xid.py",
    "bench_topology.py",
    "bench_simulated.py",
    "bench_diagnostics.py",
    "bench_record.py",
    "bench_export.py",
    "bench_ui.py",
)


def main() -> int:
    failed = []
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        if subprocess.run([sys.executable, str(HERE / name)], check=False).returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
