"""Hardware health the driver reports: uncorrected ECC errors and pending retirement (`ecc_errors`), XIDs,
and GPUs that fell off the bus (`gpu_lost`)."""

from __future__ import annotations

from collections.abc import Iterator

from gputui.diagnostics.findings import Severity
from gputui.diagnostics.rules.base import Hit, Rule, Window, at_once, ev
from gputui.diagnostics.thresholds import Thresholds


def ecc_errors(w: Window, th: Thresholds) -> Iterator[Hit]:
    for g in w.gpus():
        if (g.ecc_uncorrected or 0) > 0 or g.retired_pages_pending:
            yield Hit(
                gpus=(g.index,),
                value=g.ecc_uncorrected,
                params={"gpu": g.index},
                evidence=(
                    ev("ecc_uncorrected", g.ecc_uncorrected),
                    ev("retired_pending", None if g.retired_pages_pending is None else str(g.retired_pages_pending)),
                ),
            )


def xid(w: Window, th: Thresholds) -> Iterator[Hit]:
    """An XID is an event, not a state: the finding opens on it and stays open for `xid_hold_s`.

    Lost GPUs are included: XID 79 is what takes a GPU off the bus, and it arrives with the loss.
    """
    for g in w.latest.gpus:
        if g.xid_events:
            codes = ", ".join(str(code) for code in sorted(set(g.xid_events)))
            yield Hit(
                gpus=(g.index,),
                value=len(g.xid_events),
                params={"gpu": g.index, "codes": codes},
                evidence=(ev("xid_codes", codes),),
            )


def gpu_lost(w: Window, th: Thresholds) -> Iterator[Hit]:
    """A GPU the driver can no longer reach: every job on it has failed or hangs."""
    for g in w.latest.gpus:
        if g.lost:
            yield Hit(gpus=(g.index,), params={"gpu": g.index}, evidence=(ev("gpu_error", g.error or "GpuIsLost"),))


RULES = (
    Rule("gpu_lost", Severity.CRITICAL, gpu_lost, open_after=at_once),
    Rule("ecc_errors", Severity.CRITICAL, ecc_errors, open_after=at_once),
    Rule("xid", Severity.CRITICAL, xid, open_after=at_once, close_after=lambda th: th.xid_hold_s),
)
