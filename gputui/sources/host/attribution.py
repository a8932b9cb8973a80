"""Whose job a GPU process is on a cluster: its Kubernetes pod, namespace and container, or its Slurm job and user.

Read from /proc, seen from the host (the exporter's DaemonSet runs with hostPID):
- Kubernetes: the pod uid and container id in /proc/PID/cgroup (procfs.cgroup_ids reads both kubelet cgroup
  drivers), named by the kubelet's pod-resources API where its socket is mounted (podresources/kubelet.py);
  without it the pod reads as its uid, the container as its short id, the namespace None.
- Slurm: `.../slurm/uid_<uid>/job_<id>/...` in the cgroup (cgroup/v1, or a v2 tree laid out the same) or
  `.../slurmstepd.scope/job_<id>/...` (Slurm's cgroup/v2 plugin), else SLURM_JOB_ID in /proc/PID/environ where
  it can be read (another user's process without root: no error, no job); the user from the cgroup's uid or
  SLURM_JOB_USER.

What the cgroup and environment say is read once per process (pid and start time, so a reused PID is read
again); only the names are looked up again on the slow cadence, since the kubelet may name a pod later.
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from gputui.foreign_text import clean_optional
from gputui.sources.host import procfs
from gputui.sources.host.podresources.kubelet import PodNames

_SLURM_UID_JOB = re.compile(r"/slurm[^/\n]*/uid_(\d+)/job_(\d+)(?=/|$)", re.MULTILINE)
_SLURM_STEPD_JOB = re.compile(r"slurmstepd\.scope/job_(\d+)(?=/|$)", re.MULTILINE)
# A process's environment can be as large as ARG_MAX allows (2 MiB and more); SLURM_* sit early in a job's,
# but the read is bounded whatever the process holds.
ENVIRON_MAX_BYTES = 256 * 1024
_CACHE_MAX = 4096


@dataclass(frozen=True, slots=True)
class Origin:
    """What a process's cgroup and environment say of where it runs; read once per process."""

    ids: procfs.CgroupIds
    job_id: str | None = None
    slurm_user: str | None = None  # the job's owner, from the cgroup's uid or SLURM_JOB_USER


@dataclass(frozen=True, slots=True)
class Attribution:
    """The ProcSample fields of attribution; None where nothing says."""

    pod: str | None = None
    namespace: str | None = None
    k8s_container: str | None = None
    job_id: str | None = None
    user: str | None = None

    def sample_fields(self) -> dict[str, Any]:
        """Its fields as keyword arguments of a ProcSample, whose fields of the same names they are; all but
        `user`, which the process's own owner, where known, comes before."""
        return {name: getattr(self, name) for name in _SAMPLE_FIELDS}


_SAMPLE_FIELDS = tuple(f.name for f in fields(Attribution) if f.name != "user")


def slurm_job(cgroup_text: str | None) -> tuple[str | None, int | None]:
    """(job id, job owner's uid) from a /proc/PID/cgroup text; (None, None) outside a Slurm job's cgroup."""
    if not cgroup_text:
        return None, None
    found = _SLURM_UID_JOB.search(cgroup_text)
    if found:
        return found.group(2), int(found.group(1))
    stepd = _SLURM_STEPD_JOB.search(cgroup_text)
    return (stepd.group(1), None) if stepd else (None, None)


def read_environ(pid: int, root: Path = Path("/")) -> dict[bytes, bytes] | None:
    """/proc/PID/environ's variables (its first ENVIRON_MAX_BYTES), raw; None when the kernel refuses it (another
    user's process, read without ptrace rights) or the process is gone."""
    try:
        fd = os.open(f"{root}/proc/{pid}/environ", os.O_RDONLY)
    except OSError:
        return None
    chunks: list[bytes] = []
    size = 0
    try:
        while size < ENVIRON_MAX_BYTES:
            chunk = os.read(fd, ENVIRON_MAX_BYTES - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    out: dict[bytes, bytes] = {}
    for entry in b"".join(chunks).split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name not in out:
            out[name] = value
    return out


def environ_values(pid: int, keys: Iterable[bytes], root: Path = Path("/")) -> dict[bytes, str]:
    """The values of `keys` in /proc/PID/environ (its first ENVIRON_MAX_BYTES); {} when it cannot be read."""
    environ = read_environ(pid, root) or {}
    return {key: environ[key].decode("utf-8", "replace") for key in keys if key in environ}


def user_name(uid: int) -> str:
    """The login name of `uid`, or the number itself where this machine's password database lacks it."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def read_origin(pid: int, root: Path = Path("/")) -> Origin:
    """What process `pid`'s cgroup says, and its environment where the cgroup names no job and no pod."""
    text = procfs.read_cgroup_text(pid, root)
    ids = procfs.cgroup_ids(text)
    job_id, uid = slurm_job(text)
    user = user_name(uid) if uid is not None else None
    if job_id is None and ids.pod_uid is None:
        env = environ_values(pid, (b"SLURM_JOB_ID", b"SLURM_JOB_USER"), root)
        found = env.get(b"SLURM_JOB_ID", "")
        if found.isdigit():
            job_id, user = found, env.get(b"SLURM_JOB_USER") or None
    # The environment is the process's own to write (SLURM_JOB_USER may hold anything), and a name service's
    # user names are not this machine's to vouch for: both are cleaned here, once per process.
    return Origin(ids=ids, job_id=clean_optional(job_id), slurm_user=clean_optional(user))


class Attributor:
    """Attributes processes by PID; what /proc says is cached per (pid, start time), the names asked of `pods`."""

    def __init__(self, root: Path = Path("/"), pods: PodNames | None = None) -> None:
        self._root = root
        self.pods = pods
        self._origins: dict[tuple[int, int], Origin] = {}

    def origin(self, pid: int) -> Origin:
        """What the cgroup and environment of `pid` say, read on its first call for this process."""
        started = procfs.cpu_seconds(pid, self._root)
        if started is None:
            return read_origin(pid, self._root)  # gone, or no /proc: nothing to key a cache on
        key = (pid, started[0])
        origin = self._origins.get(key)
        if origin is None:
            if len(self._origins) > _CACHE_MAX:
                self._origins.clear()  # PIDs of long-gone jobs: start over rather than grow
            origin = self._origins[key] = read_origin(pid, self._root)
        return origin

    def attribute(self, pid: int, gpus: Iterable[str] = ()) -> Attribution:
        """Pod, namespace, container, job and user of `pid`; `gpus` are the UUIDs of the GPUs it uses, which
        name its container through the kubelet."""
        origin = self.origin(pid)
        ids = origin.ids
        if ids.pod_uid is None:
            return Attribution(job_id=origin.job_id, user=origin.slurm_user)
        short_id = ids.container_id[:12] if ids.container_id else None
        ref = self.pods.lookup(ids.pod_uid, gpus) if self.pods is not None else None
        if ref is None:
            return Attribution(pod=ids.pod_uid, k8s_container=short_id)
        return Attribution(pod=ref.pod, namespace=ref.namespace, k8s_container=ref.container or short_id)

    def retain(self, pids: Iterable[int]) -> None:
        """Forget the processes not among `pids` (they exited, or left the GPUs)."""
        keep = set(pids)
        self._origins = {key: origin for key, origin in self._origins.items() if key[0] in keep}

    def close(self) -> None:
        if self.pods is not None:
            self.pods.close()
