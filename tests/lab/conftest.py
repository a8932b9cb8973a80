"""The lab's cases run once per session: the infrastructure tests and the case tests read the same outcomes."""

from __future__ import annotations

import pytest

from tests.lab.jobs import BY_NAME, CaseSkipped, Lab, Outcome, Variant, run_case, torch_missing

_OUTCOMES: dict[tuple[str, Variant], Outcome | CaseSkipped] = {}


@pytest.fixture(autouse=True)
def _needs_torch() -> None:
    missing = torch_missing()
    if missing is not None:
        pytest.skip(missing)


@pytest.fixture(scope="session")
def lab() -> Lab:
    """`lab("c")`: case c's outcome, run on first use (`lab("h", "run")`: in a variant, tests/lab/jobs.py); the
    test skips with the reason where it cannot be staged, or with the figures where a process named there kept
    the machine busier than the case can bear while it ran."""

    def outcome(name: str, variant: Variant = "") -> Outcome:
        key = (name, variant)
        called = f"{name}@{variant}" if variant else name
        if key not in _OUTCOMES:
            try:
                _OUTCOMES[key] = run_case(BY_NAME[name], variant=variant)
            except CaseSkipped as skipped:
                _OUTCOMES[key] = skipped
        found = _OUTCOMES[key]
        if isinstance(found, CaseSkipped):
            pytest.skip(f"lab case {called}: {found}")
        busy = found.crowded()
        if busy is not None:
            pytest.skip(f"lab case {called}: {busy}")
        return found

    return outcome
