"""Every reading of the NVIDIA driver goes through here, under one policy for what each NVML error means.

A `Query` is one reading of one GPU: the pynvml functions that give it, newest first (a new name before its
deprecated one, a v3 struct before v2), with the GPU's handle bound. What each answer does:

| NVML answers                                        | the reading                      | asked again         |
|-----------------------------------------------------|----------------------------------|---------------------|
| a value                                             | the value                        | yes                 |
| FunctionNotFound: the driver predates the function; | the next variant, tried at once; | never this variant  |
| ArgumentVersionMismatch: it predates the struct     | None when no variant is left     |                     |
| version; or this pynvml lacks the function          |                                  |                     |
| NotSupported: this GPU has no such reading          | None ("n/a")                     | never, on this GPU  |
| NoPermission: not ours to read                      | None ("n/a")                     | never, on this GPU  |
| GpuIsLost: the GPU fell off the bus; ResetRequired: | `GpuLost` raised: the source     | nothing on that GPU |
| it answers nothing until reset                      | marks the whole GPU lost         |                     |
| InvalidArgument, asked of a MIG instance's handle   | None ("n/a")                     | never, on this      |
| (`Nvml.mig_query`): drivers refuse questions that   |                                  | instance            |
| make no sense for a slice this way                  |                                  |                     |
| Unknown, and any other NVMLError (Timeout,          | None for this call               | yes, next time      |
| NotFound, InvalidArgument, InsufficientSize, ...):  |                                  |                     |
| a passing failure                                   |                                  |                     |

On a whole GPU, InvalidArgument stays a passing failure: it is also how NVML answers a MIG index past the last
or a link past the GPU's last, which says nothing of the next question. A MIG instance's readings (NotSupported,
NoPermission, InvalidArgument) end for that instance only. What the driver does not give is None, never 0.
`Fields` applies the same policy to each field of a field-values call by its own return code; the fields are
asked together, so once one is not given none are asked again.
Outside the policy are the calls that read nothing: starting and stopping NVML and opening a GPU's handle (their
errors say why the source cannot run, in NvmlSource), freeing GPM buffers and event sets (nothing is left to do
when that fails), and the XID thread's wait, whose Timeout is how a wait without events ends (events.py).
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any

Call = Callable[..., Any]

LOST = "GPU is lost (fell off the bus): 'dmesg' shows the Xid; it needs a reset or a reboot"
RESET_REQUIRED = "GPU needs a reset before it answers again: 'dmesg' shows the Xid; reset it or reboot"


class Verdict(enum.Enum):
    """What an NVML error means for the reading that got it."""

    NEXT_VARIANT = "this variant is missing: try the next"
    UNAVAILABLE = "not given on this GPU: None, never asked again"
    LOST = "the GPU is gone: mark it lost"
    PASSING = "a passing failure: None now, asked again"


# pynvml's constant names, so a pynvml that lacks one (an old nvidia-ml-py) simply has no such verdict.
_VERDICTS = {
    "NVML_ERROR_FUNCTION_NOT_FOUND": Verdict.NEXT_VARIANT,
    "NVML_ERROR_ARGUMENT_VERSION_MISMATCH": Verdict.NEXT_VARIANT,
    "NVML_ERROR_NOT_SUPPORTED": Verdict.UNAVAILABLE,
    "NVML_ERROR_NO_PERMISSION": Verdict.UNAVAILABLE,
    "NVML_ERROR_GPU_IS_LOST": Verdict.LOST,
    "NVML_ERROR_RESET_REQUIRED": Verdict.LOST,
}
_LOST_REASONS = {"NVML_ERROR_GPU_IS_LOST": LOST, "NVML_ERROR_RESET_REQUIRED": RESET_REQUIRED}
# What changes for a question asked of a MIG instance's own handle.
_MIG_VERDICTS = {"NVML_ERROR_INVALID_ARGUMENT": Verdict.UNAVAILABLE}


class GpuLost(Exception):
    """The GPU stopped answering for good; `reason` says so on screen."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Nvml:
    """The pynvml module together with the policy: what each error code means, and the queries that apply it."""

    def __init__(self, pynvml: ModuleType) -> None:
        self.pynvml = pynvml
        self.error: type[Exception] = pynvml.NVMLError
        self.success: int = pynvml.NVML_SUCCESS
        self._verdicts = {getattr(pynvml, name): v for name, v in _VERDICTS.items() if hasattr(pynvml, name)}
        self._mig_verdicts = {
            **self._verdicts,
            **{getattr(pynvml, name): v for name, v in _MIG_VERDICTS.items() if hasattr(pynvml, name)},
        }
        self._lost = {getattr(pynvml, name): why for name, why in _LOST_REASONS.items() if hasattr(pynvml, name)}

    def verdict(self, code: int, mig_device: bool = False) -> Verdict:
        """The policy for one NVML return code (an NVMLError's `value`), asked of a GPU or of a MIG instance."""
        return (self._mig_verdicts if mig_device else self._verdicts).get(code, Verdict.PASSING)

    def lost(self, code: int) -> GpuLost:
        return GpuLost(self._lost.get(code, LOST))

    def function(self, name: str, *args: Any, **kwargs: Any) -> Call | None:
        """pynvml's `name` with its first arguments bound (the handle, a clock id); None where pynvml lacks it."""
        fn = getattr(self.pynvml, name, None)
        if fn is None:
            return None
        return functools.partial(fn, *args, **kwargs) if args or kwargs else fn

    def variants(self, names: Iterable[str], *args: Any) -> tuple[Call | None, ...]:
        """The functions `names`, newest first, each with `args` bound (none: the handle is given at each call)."""
        return tuple(self.function(name, *args) for name in names)

    def memory_info(self, *args: Any) -> tuple[Call | None, ...]:
        """nvmlDeviceGetMemoryInfo newest first: with the v2 struct (it tells reserved memory apart) where this
        pynvml has it, then v1; `args` as for `variants`."""
        v2 = getattr(self.pynvml, "nvmlMemory_v2", None)
        newest = self.function("nvmlDeviceGetMemoryInfo", *args, version=v2) if v2 is not None else None
        return newest, self.function("nvmlDeviceGetMemoryInfo", *args)

    def query(self, *variants: Call | None) -> Query:
        return Query(self, variants)

    def mig_query(self, *variants: Call | None) -> Query:
        """A reading of one MIG instance (its own handle, bound or passed at call): InvalidArgument ends it too."""
        return Query(self, variants, mig_device=True)

    def ask(self, name: str, *args: Any) -> Any:
        """One question asked once (a fact read at open): the value, or None; GpuLost raised."""
        return Query(self, (self.function(name, *args),))()


class Query:
    """One reading through its variants, newest first; what the policy has learnt of them is kept here.

    Called with whatever the variants were not bound to (a link number, a timestamp). `failure` holds the
    error of the last call that gave none (None after a value), for the readers that say why.
    """

    __slots__ = ("_mig_device", "_nvml", "_variants", "failure")

    def __init__(self, nvml: Nvml, variants: Iterable[Call | None], mig_device: bool = False) -> None:
        self._nvml = nvml
        self._variants = [variant for variant in variants if variant is not None]
        self._mig_device = mig_device
        self.failure: Exception | None = None

    @property
    def available(self) -> bool:
        """False once no variant is left to ask: the reading is None for good."""
        return bool(self._variants)

    def __call__(self, *args: Any) -> Any:
        variants = self._variants
        while variants:
            try:
                value = variants[0](*args)
            except self._nvml.error as exc:
                self.failure = exc
                code: int = exc.value  # type: ignore[attr-defined]  # every NVMLError carries its return code
                verdict = self._nvml.verdict(code, self._mig_device)
                if verdict is Verdict.NEXT_VARIANT:
                    del variants[0]
                    continue
                if verdict is Verdict.UNAVAILABLE:
                    variants.clear()
                elif verdict is Verdict.LOST:
                    raise self._nvml.lost(code) from exc
                return None
            self.failure = None
            return value
        return None


class Fields:
    """Field values of one GPU asked together in one nvmlDeviceGetFieldValues call, each field's own return code
    under the policy. They are asked together because they are used together: once one is not given
    (NotSupported, NoPermission), none are asked again."""

    def __init__(self, nvml: Nvml, handle: Any, ids: Sequence[int | tuple[int, int]]) -> None:
        self._nvml = nvml
        self._ids = list(ids)
        self._call = nvml.query(nvml.function("nvmlDeviceGetFieldValues", handle))
        self._given = True

    @property
    def available(self) -> bool:
        return self._given and self._call.available

    def __call__(self) -> list[float | int | None]:
        """Each field's value in the order asked; None where it was not given."""
        out: list[float | int | None] = [None] * len(self._ids)
        values = self._call(self._ids) if self._given else None
        if values is None:
            return out
        success = self._nvml.success
        for position, value in enumerate(values):
            code = value.nvmlReturn
            if code == success:
                out[position] = self._number(value)
                continue
            verdict = self._nvml.verdict(code)
            if verdict is Verdict.LOST:
                raise self._nvml.lost(code)
            if verdict is not Verdict.PASSING:
                self._given = False
        return out

    def _number(self, value: Any) -> float | int:
        """The number in an nvmlFieldValue_t, read through the member its valueType names."""
        pynvml = self._nvml.pynvml
        kind = value.valueType
        if kind == pynvml.NVML_VALUE_TYPE_DOUBLE:
            return float(value.value.dVal)
        if kind == pynvml.NVML_VALUE_TYPE_UNSIGNED_INT:
            return int(value.value.uiVal)
        if kind == pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG:
            return int(value.value.ulVal)
        if kind == pynvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG:
            return int(value.value.sllVal)
        if kind == pynvml.NVML_VALUE_TYPE_SIGNED_INT:
            return int(value.value.siVal)
        return int(value.value.ullVal)
