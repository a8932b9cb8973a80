"""examples/kubernetes/: the DaemonSet, Service and ServiceMonitor keep the properties the README promises.

The manifests are parsed, not grepped: hostPID, read-only mounts, limits, a read-only root filesystem, no
privileges, every capability dropped, one port from the container to the ServiceMonitor, and a command line
that gputui's own argument parser accepts.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from gputui.cli import build_parser
from gputui.commands import export

yaml = pytest.importorskip("yaml", reason="PyYAML (the dev extra) parses the manifests: pip install -e '.[dev]'")

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "examples" / "kubernetes"


def documents() -> Iterator[dict[str, Any]]:
    for path in sorted(MANIFESTS.glob("*.yaml")):
        yield from (doc for doc in yaml.safe_load_all(path.read_text()) if doc)


def one(kind: str) -> dict[str, Any]:
    found = [doc for doc in documents() if doc["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind}s in {MANIFESTS}"
    return found[0]


def pod_spec() -> dict[str, Any]:
    spec: dict[str, Any] = one("DaemonSet")["spec"]["template"]["spec"]
    return spec


def container() -> dict[str, Any]:
    containers = pod_spec()["containers"]
    assert len(containers) == 1
    found: dict[str, Any] = containers[0]
    return found


def metrics_port() -> dict[str, Any]:
    ports = [p for p in container()["ports"] if p["name"] == "metrics"]
    assert len(ports) == 1
    return ports[0]


def parsed_command() -> Any:
    """The container's command line as `gputui` would parse it; SystemExit (argparse's error) fails the test."""
    argv = [*container()["command"], *container().get("args", [])]
    assert argv[:2] == ["gputui", "export"], argv
    return build_parser().parse_args(argv[1:])


def test_the_container_runs_gputui_export_with_options_its_parser_accepts() -> None:
    # The executable the command names is the package's, and runs the parser read here.
    assert [ep.value for ep in entry_points(group="console_scripts") if ep.name == "gputui"] == ["gputui.cli:main"]
    args = parsed_command()
    assert args.func is export.run
    assert args.bind == "0.0.0.0"  # the default (127.0.0.1) cannot be scraped from outside the pod
    assert args.ignore_own_cgroup  # the pod's limits are not the jobs'
    assert args.demo is None and args.demo_job is None  # the real driver, never the simulated machine


def test_a_bad_option_in_the_command_would_be_caught() -> None:
    """The check above means something: gputui's parser rejects what it does not know."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["export", "--listen=0.0.0.0"])


def test_one_port_from_the_container_to_the_service_monitor() -> None:
    port = metrics_port()
    assert parsed_command().port == port["containerPort"] == export.DEFAULT_PORT
    service = one("Service")
    (service_port,) = service["spec"]["ports"]
    assert service_port["targetPort"] in (port["name"], port["containerPort"])
    assert service_port["port"] == port["containerPort"]
    monitor = one("ServiceMonitor")
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [service_port["name"]]
    assert monitor["spec"]["endpoints"][0].get("path", "/metrics") == "/metrics"


def test_service_and_monitor_select_the_daemonset_pods() -> None:
    daemonset = one("DaemonSet")
    pod_labels = daemonset["spec"]["template"]["metadata"]["labels"]
    assert daemonset["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    service = one("Service")
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"].get("clusterIP") == "None"  # headless: every node's pod is scraped, not one at random
    monitor = one("ServiceMonitor")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    namespace = daemonset["metadata"]["namespace"]
    assert service["metadata"]["namespace"] == namespace
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [namespace]


def test_host_pid_and_the_gpus_without_taking_one() -> None:
    spec = pod_spec()
    assert spec["hostPID"] is True
    assert not spec.get("hostNetwork") and not spec.get("hostIPC")
    assert spec["runtimeClassName"] == "nvidia"
    env = {e["name"]: e for e in container()["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    resources = container()["resources"]
    for part in ("requests", "limits"):
        assert not [name for name in resources[part] if name.startswith("nvidia.com/")]
    # The host label names the node (what dcgm-exporter does), not the pod.
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"


def test_every_mount_but_the_history_is_read_only_and_the_pod_resources_socket_is_one() -> None:
    mounts = container()["volumeMounts"]
    assert mounts and all(m.get("readOnly") is True for m in mounts if m["name"] != "history")
    volumes = {v["name"]: v for v in pod_spec()["volumes"]}
    by_path = {
        volumes[m["name"]]["hostPath"]["path"]: m["mountPath"] for m in mounts if "hostPath" in volumes[m["name"]]
    }
    assert by_path == {
        "/var/lib/kubelet/pod-resources": "/var/lib/kubelet/pod-resources",
        "/var/lib/gputui": "/var/lib/gputui",
    }


def test_the_exporter_keeps_the_nodes_history_on_the_host() -> None:
    args = parsed_command()
    assert args.history and str(args.store) == "/var/lib/gputui"
    [history] = [v for v in pod_spec()["volumes"] if v["name"] == "history"]
    assert history["hostPath"] == {"path": "/var/lib/gputui", "type": "DirectoryOrCreate"}


def test_requests_and_limits_are_set() -> None:
    resources = container()["resources"]
    for part in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(resources[part]), part


def test_no_privileges_it_does_not_need() -> None:
    security = container()["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["privileged"] is False
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert not security["capabilities"].get("add")
    assert pod_spec()["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod_spec()["automountServiceAccountToken"] is False
    # Root only for the kubelet's socket, and said so where it is set.
    text = (MANIFESTS / "daemonset.yaml").read_text()
    if security.get("runAsNonRoot") is not True:
        assert security["runAsUser"] == 0
        assert "pod-resources socket" in text.split("runAsUser: 0")[0].rsplit("securityContext:", 1)[1]


def test_scheduled_on_gpu_nodes_through_their_taint() -> None:
    spec = pod_spec()
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    keys = {expr["key"] for term in terms for expr in term["matchExpressions"]}
    assert "nvidia.com/gpu.present" in keys
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]


def test_kustomization_lists_every_manifest() -> None:
    kustomization = one("Kustomization")
    listed = set(kustomization["resources"])
    present = {p.name for p in MANIFESTS.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present


def test_kustomize_builds_the_manifests() -> None:
    """kubectl's own kustomize renders the set offline (no cluster needed): every document is well formed."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the manifests were parsed with PyYAML only")
    done = subprocess.run([kubectl, "kustomize", str(MANIFESTS)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    kinds = [doc["kind"] for doc in yaml.safe_load_all(done.stdout) if doc]
    assert sorted(kinds) == ["DaemonSet", "Namespace", "Service", "ServiceMonitor"]
    assert kinds[0] == "Namespace"  # applied first, so the rest has somewhere to go
