"""Pod names from the kubelet: `PodResourcesLister.List` over its unix socket, asked off the sampling path.

A process's cgroup gives its pod's uid and its container's id, never their names; the kubelet's pod-resources
API gives names, and which container each device was allocated to, but no uid. The two meet at the GPU: a
process on GPU `GPU-1234...` belongs to the container holding that device (the NVIDIA device plugin names a GPU
by its UUID, `<uuid>::<n>` for a time-sliced replica). Once a pod uid is matched with a name through a GPU it
keeps it (a uid names one pod for ever), so another process of the pod, one on no GPU or on a GPU shared by
several pods, is named too. A GPU shared by pods whose other uids are known is the one left over.

Asking costs a gRPC round trip that can hang on a stuck kubelet, so a thread of its own asks, with a short
timeout, when a lookup wants it: at most every `refresh_s` (pods change rarely) or at once for a uid seen for
the first time. A lookup never waits: it answers from the last list, and None where that has no name, so the
pod's uid stays shown. No socket, no grpcio, or a kubelet that errs or is slow: no names, and `error` says why.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputui.foreign_text import clean

DEFAULT_SOCKET = Path("/var/lib/kubelet/pod-resources/kubelet.sock")
SOCKET_ENV = "GPUTUI_POD_RESOURCES_SOCKET"  # where the DaemonSet mounts the kubelet's socket, if elsewhere
REFRESH_S = 10.0
TIMEOUT_S = 1.0
# The kubelet's List answer lists every pod on the node with its devices: a few hundred KB at most. This only
# stops a runaway answer.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


def default_socket() -> Path:
    """The kubelet's pod-resources socket: $GPUTUI_POD_RESOURCES_SOCKET, else the kubelet's own default."""
    return Path(os.environ.get(SOCKET_ENV) or DEFAULT_SOCKET)


@dataclass(frozen=True, slots=True)
class PodRef:
    """A container of a pod, as the kubelet names it; `container` is None where the pod has several and which
    one holds the process cannot be told."""

    namespace: str
    pod: str
    container: str | None


# What one List call gives: each container's name with the device ids allocated to it, per pod.
PodList = Sequence[tuple[str, str, Sequence[tuple[str, Sequence[str]]]]]  # (namespace, pod, [(container, [ids])])


def list_pods(socket: Path, timeout_s: float = TIMEOUT_S) -> PodList:
    """One `PodResourcesLister.List` call over the unix socket; raises grpc.RpcError, or ImportError without grpcio.

    A new channel each call: it is every REFRESH_S at most, and a channel kept open would hold a connection to a
    kubelet that may restart under it."""
    import grpc

    from gputui.sources.host.podresources.third_party import api_pb2, api_pb2_grpc

    options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
    with grpc.insecure_channel(f"unix://{socket}", options=options) as channel:
        stub = api_pb2_grpc.PodResourcesListerStub(channel)
        answer: Any = stub.List(api_pb2.ListPodResourcesRequest(), timeout=timeout_s)
    return [
        (
            str(pod.namespace),
            str(pod.name),
            [(str(c.name), [str(i) for devices in c.devices for i in devices.device_ids]) for c in pod.containers],
        )
        for pod in answer.pod_resources
    ]


def gpu_of_device(device_id: str) -> str:
    """The GPU a device id names: a time-sliced replica `GPU-<uuid>::<n>` is its GPU `GPU-<uuid>`."""
    return device_id.split("::", 1)[0]


class PodNames:
    """Names pods by uid from the kubelet's List, asked in a thread of its own; see the module's docstring."""

    def __init__(
        self,
        socket: Path | None = None,
        *,
        refresh_s: float = REFRESH_S,
        timeout_s: float = TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
        lister: Callable[[Path, float], PodList] = list_pods,
    ) -> None:
        self.socket = socket if socket is not None else default_socket()
        self._refresh_s = refresh_s
        self._timeout_s = timeout_s
        self._clock = clock
        self._lister = lister
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._asked_at: float | None = None  # when the last List was asked (whatever its answer)
        self._seen: dict[str, float] = {}  # pod uid -> when it was first looked up
        self._listed_at: float | None = None  # when the List the lookups read was asked
        # The last good List: each GPU's holders (namespace, pod, container), and each pod's containers.
        self._owners: dict[str, tuple[PodRef, ...]] = {}
        self._containers: dict[tuple[str, str], tuple[str, ...]] = {}
        self._by_uid: dict[str, tuple[str, str]] = {}  # pod uid -> (namespace, pod), matched through a GPU
        self.error: str | None = None  # why the last List gave no names; None after one that did
        self.lists = 0  # List calls answered, for tests and the bench

    # -- lookups (the sampling thread) -----------------------------------------------------------------

    def lookup(self, pod_uid: str, gpus: Iterable[str] = ()) -> PodRef | None:
        """The pod `pod_uid` is and the container holding the process, by the GPUs (UUIDs) it uses; None while
        the kubelet has not named it. Never waits: a List it wants is asked by the thread."""
        gpus = tuple(gpus)
        with self._lock:
            new = pod_uid not in self._seen
            if new:
                if len(self._seen) > 4096:
                    self._seen.clear()  # uids of long-gone pods: start over rather than grow
                self._seen[pod_uid] = self._clock()
            ref = self._match(pod_uid, gpus)
        self._want(urgent=new and ref is None)
        return ref

    def gpu_owners(self) -> Mapping[str, tuple[PodRef, ...]]:
        """GPU UUID -> the containers the kubelet allocated it to, as of the last List (several when shared)."""
        with self._lock:
            return dict(self._owners)

    def _match(self, pod_uid: str, gpus: tuple[str, ...]) -> PodRef | None:
        """Called with the lock held: the uid's pod through its GPUs, else as matched before.

        A GPU names a uid only by a List asked since the uid was first seen: an older one may still give the GPU
        to the pod that had it before this one."""
        fresh = self._listed_at is not None and self._listed_at >= self._seen.get(pod_uid, float("inf"))
        bound_elsewhere = {pod for uid, pod in self._by_uid.items() if uid != pod_uid}
        found: set[PodRef] = set()
        for gpu in gpus if fresh else ():
            holders = [ref for ref in self._owners.get(gpu, ()) if (ref.namespace, ref.pod) not in bound_elsewhere]
            if len({(ref.namespace, ref.pod) for ref in holders}) == 1:
                found.update(holders)
        pods = {(ref.namespace, ref.pod) for ref in found}
        if len(pods) == 1:
            namespace, pod = pods.pop()
            self._by_uid[pod_uid] = (namespace, pod)
            containers = {ref.container for ref in found}
            return PodRef(namespace, pod, containers.pop() if len(containers) == 1 else None)
        known = self._by_uid.get(pod_uid)
        if known is None:
            return None
        names = self._containers.get(known, ())
        return PodRef(known[0], known[1], names[0] if len(names) == 1 else None)

    # -- the thread that asks ----------------------------------------------------------------------------

    def _want(self, *, urgent: bool) -> None:
        """Wake the thread when a List is due: for a uid seen first, or when the last is older than refresh_s."""
        now = self._clock()
        due = self._asked_at is None or urgent or now - self._asked_at >= self._refresh_s
        if not due:
            return
        if not self.socket.exists():
            self._asked_at = now
            self._forget(f"no kubelet pod-resources socket at {self.socket}")
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="gputui-podresources", daemon=True)
            self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                return
            self._wake.clear()
            self.refresh()

    def refresh(self) -> None:
        """Ask the kubelet once, now, on this thread; what the lookups read is replaced only when it answers."""
        asked_at = self._asked_at = self._clock()
        try:
            pods = self._lister(self.socket, self._timeout_s)
        except ImportError:
            self._forget("grpcio is not installed: pip install 'gputui[k8s]' to name pods")
            return
        except Exception as exc:  # grpc.RpcError and whatever a broken answer raises: no names, the uid stays
            self._forget(f"the kubelet's pod-resources API failed: {clean(_describe(exc))}")
            return
        owners: dict[str, list[PodRef]] = {}
        containers: dict[tuple[str, str], tuple[str, ...]] = {}
        for raw_namespace, raw_pod, raw_held in pods:
            # Whoever may create pods chose these names: cleaned once per List, before any lookup returns one.
            namespace, pod = clean(raw_namespace), clean(raw_pod)
            held = [(clean(name), device_ids) for name, device_ids in raw_held]
            containers[(namespace, pod)] = tuple(name for name, _ in held)
            for name, device_ids in held:
                for gpu in dict.fromkeys(gpu_of_device(i) for i in device_ids):
                    owners.setdefault(gpu, []).append(PodRef(namespace, pod, name))
        with self._lock:
            self._owners = {gpu: tuple(refs) for gpu, refs in owners.items()}
            self._containers = containers
            # A pod gone from the node takes its uid's match with it (a uid never comes back).
            self._by_uid = {uid: pod for uid, pod in self._by_uid.items() if pod in containers}
            self._listed_at = asked_at
            self.error = None
            self.lists += 1

    def _forget(self, why: str) -> None:
        """No List to go by: the devices' holders may have changed; a uid's name, once known, is still true."""
        with self._lock:
            self._owners = {}
            self.error = why

    def close(self) -> None:
        """Stop the thread; one inside a List ends when its timeout does."""
        self._stop.set()
        self._wake.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self._timeout_s + 1.0)


def _describe(exc: BaseException) -> str:
    """A gRPC error's code and details (`UNAVAILABLE: ...`), else the exception's own text."""
    code, details = getattr(exc, "code", None), getattr(exc, "details", None)
    if callable(code) and callable(details):
        name = getattr(code(), "name", None)
        return f"{name}: {details()}" if name else str(details())
    return str(exc) or type(exc).__name__
