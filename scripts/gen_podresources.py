"""Generate the Python modules of the kubelet pod-resources API from its vendored proto (`make podresources`).

Usage: python scripts/gen_podresources.py [OUT_ROOT]
The modules land beside the proto (gputui/sources/host/podresources/third_party/) under OUT_ROOT, the repository
root when none is given; a test generates them into a temporary folder and compares them with the committed ones,
so the proto and the code cannot drift apart. Needs grpcio-tools (in the dev extra).

The proto is compiled with the repository root as its include path, so the generated gRPC module imports its
messages as `gputui.sources.host.podresources.third_party.api_pb2` (a bare `import api_pb2` would not resolve),
while the service keeps the proto's own package `v1`: the kubelet serves `/v1.PodResourcesLister/List`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = "gputui/sources/host/podresources/third_party/api.proto"
GENERATED = ("api_pb2.py", "api_pb2.pyi", "api_pb2_grpc.py")


def generate(out_root: Path) -> list[Path]:
    """Compile the proto into `out_root`/gputui/sources/host/podresources/third_party/; the files written."""
    from grpc_tools import protoc  # the generator is a dev tool: imported only when generating

    out_dir = out_root / Path(PROTO).parent
    out_dir.mkdir(parents=True, exist_ok=True)
    args = [
        "grpc_tools.protoc",
        f"-I{ROOT}",
        f"--python_out={out_root}",
        f"--pyi_out={out_root}",
        f"--grpc_python_out={out_root}",
        str(ROOT / PROTO),
    ]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed on {PROTO}")
    return [out_dir / name for name in GENERATED]


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    for path in generate(target):
        print(path)
