"""`gputui topo`: how the GPUs connect (NVLink, PCIe paths, P2P, NUMA), as `nvidia-smi topo -m` prints it."""

from __future__ import annotations

import argparse
from typing import Any

from gputui.commands import common
from gputui.commands.snapshot import show, take_reading
from gputui.model import Snapshot


def register(sub: Any) -> None:
    parser = sub.add_parser("topo", help="print the GPU topology: NVLink, PCIe paths, P2P, NUMA node, CPU affinity")
    common.add_source_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON (system.topology as recordings hold it)")
    parser.set_defaults(func=run)


def take_snapshot(args: argparse.Namespace) -> Snapshot:
    """One reading: the topology is read once when the source opens; links active come with the sample."""
    return take_reading(args, rates=False)


def topo_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    from gputui.serialize import SCHEMA_VERSION, system_to_dict, topology_to_dict

    topology = snapshot.system.topology
    active = {gpu.index: gpu.nvlink_links_active for gpu in snapshot.gpus}
    system = system_to_dict(snapshot.system)
    del system["topology"]  # once, at the top level
    nvlink = [
        {
            "index": info.index,
            "links_active": active.get(info.index),
            "links_total": info.nvlink_links_total,
            "version": info.nvlink_version,
        }
        for info in snapshot.gpu_info
    ]
    return {
        "schema": SCHEMA_VERSION,
        "system": system,
        "topology": None if topology is None else topology_to_dict(topology),
        "nvlink": nvlink,
    }


def run(args: argparse.Namespace) -> int:
    return show(args, take_snapshot, topo_to_dict, _print_table)


def _print_table(snapshot: Snapshot) -> None:
    from gputui.text.snapshot_text import print_topology  # rich's tables, loaded only when one is printed

    print_topology(snapshot)
