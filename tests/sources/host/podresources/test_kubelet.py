"""The kubelet's pod-resources API against a real gRPC server: `PodResourcesLister` from the generated servicer
on a unix socket in a temporary folder, answering as a kubelet would; then no socket, a server that errs and
one too slow for the timeout. Also: the committed modules are what the vendored proto generates."""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

import pytest

grpc = pytest.importorskip("grpc", reason="grpcio is not installed (the k8s extra): pod names cannot be tested")

from gputui.sources.host.attribution import Attribution, Attributor  # noqa: E402
from gputui.sources.host.podresources.kubelet import PodNames, PodRef, list_pods  # noqa: E402
from gputui.sources.host.podresources.third_party import api_pb2, api_pb2_grpc  # noqa: E402
from tests.conftest import Clock  # noqa: E402
from tests.sources.host.fake_tree import proc_root, process  # noqa: E402

REPO = Path(__file__).resolve().parents[4]
UID_A = "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
UID_B = "1a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"
HEX64 = "4f1e2d3c" * 8
GPU0, GPU1, GPU2 = "GPU-0b5f3c1e-aaaa", "GPU-1c6e4d2f-bbbb", "GPU-2d7f5e30-cccc"


def pod(namespace: str, name: str, *containers: tuple[str, list[str]]) -> Any:
    """A PodResources message: containers with the nvidia.com/gpu device ids allocated to each."""
    return api_pb2.PodResources(
        name=name,
        namespace=namespace,
        containers=[
            api_pb2.ContainerResources(
                name=container,
                devices=[api_pb2.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=ids)] if ids else [],
            )
            for container, ids in containers
        ],
    )


class Kubelet(api_pb2_grpc.PodResourcesListerServicer):  # type: ignore[misc]
    """What a kubelet answers List with; `fail` aborts with a status. A test that clears `answering` holds every
    answer back until it sets it again (the teardown sets it, so a held answer ends with the test)."""

    def __init__(self) -> None:
        self.pods: list[Any] = []
        self.calls = 0
        self.fail: Any = None
        self.answering = threading.Event()
        self.answering.set()

    def List(self, request: Any, context: Any) -> Any:  # the proto names it so
        self.calls += 1
        self.answering.wait()
        if self.fail is not None:
            context.abort(self.fail, "the device manager is not ready")
        return api_pb2.ListPodResourcesResponse(pod_resources=self.pods)


@pytest.fixture
def kubelet() -> Iterator[tuple[Kubelet, Path]]:
    """A real gRPC server for PodResourcesLister on a unix socket (a short path: sun_path holds 108 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="kubelet-", dir="/tmp"))
    socket = folder / "kubelet.sock"
    servicer = Kubelet()
    executor = futures.ThreadPoolExecutor(max_workers=2)
    server = grpc.server(executor)
    api_pb2_grpc.add_PodResourcesListerServicer_to_server(servicer, server)
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    try:
        yield servicer, socket
    finally:
        servicer.answering.set()
        server.stop(0).wait(5)
        executor.shutdown()  # the server leaves its executor's threads to it
        shutil.rmtree(folder, ignore_errors=True)


def until(check: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    """Poll `check` until true or `timeout_s` has passed; whether it became true."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.01)
    return check()


@pytest.fixture
def names(kubelet: tuple[Kubelet, Path]) -> Iterator[PodNames]:
    client = PodNames(kubelet[1], timeout_s=2.0)
    yield client
    client.close()


def test_list_reads_a_real_server(kubelet: tuple[Kubelet, Path]) -> None:
    servicer, socket = kubelet
    servicer.pods = [pod("ml", "train-0", ("trainer", [GPU0, GPU1]), ("sidecar", []))]
    assert list_pods(socket, 2.0) == [("ml", "train-0", [("trainer", [GPU0, GPU1]), ("sidecar", [])])]


def test_a_pod_is_named_through_the_gpu_its_process_uses(kubelet: tuple[Kubelet, Path], names: PodNames) -> None:
    servicer, _ = kubelet
    servicer.pods = [pod("ml", "train-0", ("trainer", [GPU0]), ("sidecar", [])), pod("ml", "eval-0", ("eval", [GPU1]))]
    assert names.lookup(UID_A, [GPU0]) is None  # never waits: the first List is asked in the background
    assert until(lambda: names.lists == 1)
    assert names.lookup(UID_A, [GPU0]) == PodRef("ml", "train-0", "trainer")
    # Another process of the pod on no GPU: the uid is known now, but not which of its two containers.
    assert names.lookup(UID_A, []) == PodRef("ml", "train-0", None)
    assert names.gpu_owners() == {GPU0: (PodRef("ml", "train-0", "trainer"),), GPU1: (PodRef("ml", "eval-0", "eval"),)}
    assert names.error is None


def test_the_attributor_names_a_process_through_the_kubelet(kubelet: tuple[Kubelet, Path], tmp_path: Path) -> None:
    servicer, socket = kubelet
    servicer.pods = [pod("research", "llm-7b-0", ("worker", [GPU2]))]
    root = proc_root(tmp_path)
    process(
        root,
        4242,
        cgroup=f"0::/kubepods.slice/kubepods-pod{UID_A.replace('-', '_')}.slice/cri-containerd-{HEX64}.scope\n",
    )
    attributor = Attributor(root, PodNames(socket, timeout_s=2.0))
    try:
        assert attributor.attribute(4242, [GPU2]) == Attribution(pod=UID_A, k8s_container=HEX64[:12])
        assert attributor.pods is not None and until(lambda: attributor.pods.lists == 1)  # type: ignore[union-attr]
        assert attributor.attribute(4242, [GPU2]) == Attribution(
            pod="llm-7b-0", namespace="research", k8s_container="worker"
        )
    finally:
        attributor.close()


def test_time_sliced_replicas_name_their_gpu_and_a_shared_gpu_names_the_pod_left_over(
    kubelet: tuple[Kubelet, Path], names: PodNames
) -> None:
    servicer, _ = kubelet
    servicer.pods = [
        pod("a", "one", ("c", [f"{GPU0}::0", f"{GPU1}::0"])),  # the device plugin's time-slicing replicas
        pod("b", "two", ("c", [f"{GPU0}::1"])),
    ]
    assert names.lookup(UID_B, [GPU0]) is None and names.lookup(UID_A, [GPU0, GPU1]) is None  # no List yet
    names.refresh()
    assert names.lookup(UID_B, [GPU0]) is None  # GPU0 is shared by both pods: which one cannot be told yet
    assert names.lookup(UID_A, [GPU0, GPU1]) == PodRef("a", "one", "c")  # GPU1 is pod one's alone
    assert names.lookup(UID_B, [GPU0]) == PodRef("b", "two", "c")  # one's uid is known: GPU0's other holder


def test_lists_are_asked_at_most_every_refresh_or_for_a_new_uid(kubelet: tuple[Kubelet, Path]) -> None:
    servicer, socket = kubelet
    servicer.pods = [pod("ml", "train-0", ("trainer", [GPU0]))]
    clock = Clock(100.0)
    names = PodNames(socket, timeout_s=2.0, clock=clock)
    try:
        names.lookup(UID_A, [GPU0])
        assert until(lambda: names.lists == 1)
        for _ in range(5):  # the slow ticks of the next few seconds: answered from the last List
            clock.advance(1.0)
            assert names.lookup(UID_A, [GPU0]) == PodRef("ml", "train-0", "trainer")
        names.lookup(UID_B, [GPU1])  # a uid never seen: asked at once
        assert until(lambda: names.lists == 2)
        names.lookup(UID_B, [GPU1])  # still unknown, but already asked for: not again before the refresh
        time.sleep(0.1)
        assert servicer.calls == 2
        clock.advance(10.0)
        names.lookup(UID_A, [GPU0])
        assert until(lambda: names.lists == 3)
    finally:
        names.close()


def test_no_socket_no_names_and_no_thread(tmp_path: Path) -> None:
    names = PodNames(tmp_path / "kubelet.sock")
    assert names.lookup(UID_A, [GPU0]) is None
    assert names.error is not None and "no kubelet pod-resources socket" in names.error
    assert not any(thread.name == "gputui-podresources" for thread in threading.enumerate())
    root = proc_root(tmp_path)
    process(root, 7, cgroup=f"0::/kubepods/pod{UID_A}/{HEX64}\n")
    assert Attributor(root, names).attribute(7, [GPU0]) == Attribution(pod=UID_A, k8s_container=HEX64[:12])


def test_a_kubelet_that_errs_gives_no_names(kubelet: tuple[Kubelet, Path], names: PodNames) -> None:
    servicer, _ = kubelet
    servicer.pods = [pod("ml", "train-0", ("trainer", [GPU0]))]
    servicer.fail = grpc.StatusCode.INTERNAL
    assert names.lookup(UID_A, [GPU0]) is None  # a new uid: the client's thread asks at once, and fails
    assert until(lambda: names.error is not None)
    assert names.lookup(UID_A, [GPU0]) is None
    assert names.error == "the kubelet's pod-resources API failed: INTERNAL: the device manager is not ready"
    servicer.fail = None
    names.refresh()  # it comes back: names again
    assert names.lookup(UID_A, [GPU0]) == PodRef("ml", "train-0", "trainer")
    assert names.error is None


def test_a_slow_kubelet_times_out_and_never_holds_up_a_lookup(kubelet: tuple[Kubelet, Path]) -> None:
    servicer, socket = kubelet
    servicer.pods = [pod("ml", "train-0", ("trainer", [GPU0]))]
    servicer.answering.clear()
    names = PodNames(socket, timeout_s=0.2)
    try:
        started = time.monotonic()
        assert names.lookup(UID_A, [GPU0]) is None
        assert time.monotonic() - started < 0.1  # the List runs on the client's thread, not the caller's
        assert until(lambda: names.error is not None)
        assert names.error is not None and "DEADLINE_EXCEEDED" in names.error
        assert names.lookup(UID_A, [GPU0]) is None
    finally:
        servicer.answering.set()
        names.close()


def test_a_server_that_is_gone_gives_no_names(tmp_path: Path) -> None:
    stale = tmp_path / "kubelet.sock"
    stale.touch()  # the socket's file is there, nothing listens on it: a kubelet that stopped
    names = PodNames(stale, timeout_s=0.5)
    try:
        names.refresh()
        assert names.error is not None and "UNAVAILABLE" in names.error
        assert names.lookup(UID_A, [GPU0]) is None  # a new uid: the client's thread starts, to ask again
    finally:
        names.close()


def test_the_messages_carry_what_the_client_reads() -> None:
    answer = api_pb2.ListPodResourcesResponse(pod_resources=[pod("ns", "p", ("c", [GPU0]))])
    parsed = api_pb2.ListPodResourcesResponse.FromString(answer.SerializeToString())
    assert parsed.pod_resources[0].containers[0].devices[0].device_ids == [GPU0]
    assert api_pb2.DESCRIPTOR.services_by_name["PodResourcesLister"].full_name == "v1.PodResourcesLister"


def _locked(name: str) -> str:
    """The version of `name` that requirements/dev.txt pins (what `make test` installs)."""
    match = re.search(rf"^{re.escape(name)}==([^ ;\\]+)", (REPO / "requirements/dev.txt").read_text(), re.MULTILINE)
    assert match is not None, f"requirements/dev.txt pins no {name}"
    return match.group(1)


def test_the_committed_modules_are_what_the_locked_generator_writes(tmp_path: Path) -> None:
    """Compared byte for byte with what the lock's grpcio-tools writes, so a generator's release elsewhere cannot
    turn this red: only a new lock can, and then `make podresources` writes the modules again."""
    if importlib.util.find_spec("grpc_tools") is None:
        pytest.skip("grpcio-tools is not installed (the dev extra): the modules cannot be regenerated to compare")
    installed, locked = importlib.metadata.version("grpcio-tools"), _locked("grpcio-tools")
    assert installed == locked, f"grpcio-tools {installed} is installed, the lock has {locked}: run make test"
    spec = importlib.util.spec_from_file_location("gen_podresources", REPO / "scripts/gen_podresources.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for generated in module.generate(tmp_path):
        committed = REPO / "gputui/sources/host/podresources/third_party" / generated.name
        assert generated.read_text() == committed.read_text(), f"{committed.name} is stale: run make podresources"


def test_the_k8s_extra_asks_for_the_grpcio_and_protobuf_the_modules_were_generated_for() -> None:
    """The modules refuse (at import) a grpcio or protobuf older than the generator that wrote them, so the extra's
    floors are those versions: a regenerated module with the old floors would install and then fail to import."""
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["k8s"]
    assert f"grpcio>={api_pb2_grpc.GRPC_GENERATED_VERSION}" in extra
    messages = (REPO / "gputui/sources/host/podresources/third_party/api_pb2.py").read_text()
    found = re.search(r"Domain\.PUBLIC,\s*(\d+),\s*(\d+),\s*(\d+),", messages)
    assert found is not None, "api_pb2.py no longer checks the protobuf runtime as this test reads it"
    assert f"protobuf>={'.'.join(found.groups())}" in extra


# "self": the monitor; None: the exporter's DaemonSet (--ignore-own-cgroup), which reads no cgroup of its own.
@pytest.mark.parametrize("own_cgroup", ["self", None])
def test_the_driver_source_names_its_processes_pods(
    kubelet: tuple[Kubelet, Path], tmp_path: Path, own_cgroup: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: the driver lists a process on GPU 0, its cgroup says which pod, the kubelet which name."""
    from gputui.sources.host import source as host_source
    from gputui.sources.host.source import HostSource
    from gputui.sources.nvml.source import NvmlSource
    from tests.fake_psutil import FakeProcess, FakePsutil
    from tests.fake_pynvml import FakeGpu, FakeNvml

    servicer, socket = kubelet
    nvml = FakeNvml([FakeGpu(compute_processes=[(4242, 1 << 30)]), FakeGpu(compute_processes=[])])
    uuid = "GPU-6f2a1c3e-0000-4b1e-9a57-000000000000"  # the fake's UUID of GPU 0
    servicer.pods = [pod("ml", "train-0", ("trainer", [uuid])), pod("ml", "idle-0", ("c", ["GPU-elsewhere"]))]
    root = proc_root(tmp_path)
    process(root, 4242, {3: "/dev/nvidia0"}, cgroup=f"0::/kubepods/burstable/pod{UID_A}/{HEX64}\n")
    ps = FakePsutil()
    ps.processes[4242] = FakeProcess(4242)
    clock = Clock(1000.0)
    # The kubelet answers when the test lets it: the client's deadline must outlast the hold, however slow the tick.
    monkeypatch.setattr(host_source, "PodNames", functools.partial(PodNames, timeout_s=30.0))
    host = HostSource(clock=clock, psutil_module=ps, root=root, cgroup_pid=own_cgroup, pod_resources_socket=socket)  # type: ignore[arg-type]
    source = NvmlSource(pynvml=nvml, host=host, clock=clock, root=root, slow_every=1)
    servicer.answering.clear()
    source.open()
    try:
        first = source.sample().host.process(4242)
        assert first is not None and (first.pod, first.namespace) == (UID_A, None)  # the uid, until the kubelet answers
        assert until(lambda: servicer.calls == 1)  # asked, and held
        servicer.answering.set()
        assert host.pod_names is not None
        assert until(lambda: host.pod_names.lists >= 1)  # type: ignore[union-attr]
        named = None
        for _ in range(5):  # the next slow tick (every 5th) looks the name up
            clock.advance(1.0)
            named = source.sample().host.process(4242)
        assert named is not None
        assert (named.pod, named.namespace, named.k8s_container, named.container) == (
            "train-0",
            "ml",
            "trainer",
            f"pod {UID_A}",
        )
    finally:
        servicer.answering.set()
        source.close()


def test_a_list_older_than_a_new_pod_does_not_name_it_by_its_gpu(kubelet: tuple[Kubelet, Path]) -> None:
    """GPU 0 went from pod old-0 to pod new-0: a List asked before new-0's process was seen still gives GPU 0 to
    old-0, so it names no one; the List asked for the new uid does."""
    _, socket = kubelet  # the socket is there; the answers are the two lists, in turn
    clock = Clock(100.0)
    names = PodNames(socket, timeout_s=2.0, clock=clock, lister=lambda path, timeout: lists.pop(0))
    lists = [[("ml", "old-0", [("c", [GPU0])])], [("ml", "new-0", [("c", [GPU0])])]]
    try:
        names.refresh()
        clock.advance(1.0)
        assert names.lookup(UID_B, [GPU0]) is None  # not old-0: the List is older than this uid
        assert until(lambda: names.lists == 2)
        assert names.lookup(UID_B, [GPU0]) == PodRef("ml", "new-0", "c")
    finally:
        names.close()


def test_a_process_on_a_mig_instance_is_named_through_its_instance(
    kubelet: tuple[Kubelet, Path], tmp_path: Path
) -> None:
    """In MIG mode the kubelet hands out MIG instances ("MIG-<uuid>"), not the GPU: the process's instance names
    its pod, even where two pods share the GPU."""
    from gputui.sources.host.source import HostSource
    from gputui.sources.nvml.source import NvmlSource
    from tests.fake_psutil import FakeProcess, FakePsutil
    from tests.fake_pynvml import FakeNvml, mig_gpu

    servicer, socket = kubelet
    nvml = FakeNvml([mig_gpu(("3g.40gb", "3g.40gb"), processes=[[4242], [4343]])])
    root = proc_root(tmp_path)
    process(root, 4242, {3: "/dev/nvidia0"}, cgroup=f"0::/kubepods/burstable/pod{UID_A}/{HEX64}\n")
    ps = FakePsutil()
    ps.processes[4242] = FakeProcess(4242)
    clock = Clock(1000.0)
    host = HostSource(clock=clock, psutil_module=ps, root=root, pod_resources_socket=socket)  # type: ignore[arg-type]
    source = NvmlSource(pynvml=nvml, host=host, clock=clock, root=root, slow_every=1)
    source.open()
    try:
        mig = source.sample().gpus[0].mig
        assert mig is not None
        first, second = (device.uuid for device in mig.devices)
        assert first is not None and first.startswith("MIG-") and second is not None
        servicer.pods = [pod("ml", "train-0", ("trainer", [first])), pod("ml", "other-0", ("c", [second]))]
        assert host.pod_names is not None
        names = host.pod_names
        lists = names.lists
        named = None
        for _ in range(10):
            clock.advance(1.0)
            named = source.sample().host.process(4242)
            if named is not None and named.namespace is not None:
                break
            until(lambda: names.lists > lists)
        assert named is not None and (named.pod, named.namespace, named.k8s_container) == ("train-0", "ml", "trainer")
    finally:
        source.close()


def test_names_anyone_who_may_create_pods_chose_are_cleaned_as_the_list_comes_in(
    kubelet: tuple[Kubelet, Path], names: PodNames
) -> None:
    """A pod, namespace or container name reaches every view: a control character in one must not reach a
    terminal (protobuf strings are any UTF-8, whatever the API server's validation says of a real cluster)."""
    servicer, _ = kubelet
    servicer.pods = [pod("ns\x1b]0;X\x07", "train\u202e-0", ("c\n\x9b2J", [GPU0]))]
    names.lookup(UID_A, [GPU0])
    assert until(lambda: names.lists == 1)
    assert names.lookup(UID_A, [GPU0]) == PodRef("ns\\x1b]0;X\\x07", "train\\u202e-0", "c\\n\\x9b2J")
    assert names.gpu_owners() == {GPU0: (PodRef("ns\\x1b]0;X\\x07", "train\\u202e-0", "c\\n\\x9b2J"),)}
