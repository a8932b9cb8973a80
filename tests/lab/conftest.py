"""The lab's cases run once per session: the infrastructure tests and the case tests read the same outcomes."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.lab.jobs import BY_NAME, CaseSkipped, Outcome, run_case, torch_missing

_OUTCOMES: dict[str, Outcome | CaseSkipped] = {}


@pytest.fixture(autouse=True)
def _needs_torch() -> None:
    missing = torch_missing()
    if missing is not None:
        pytest.skip(missing)


@pytest.fixture(scope="session")
def lab() -> Callable[[str], Outcome]:
    """`lab("c")`: case c's outcome, run on first use; the test skips with the reason where it cannot be staged,
    or with the figures where the machine was busier than the case can bear while it ran."""

    def outcome(name: str) -> Outcome:
        if name not in _OUTCOMES:
            try:
                _OUTCOMES[name] = run_case(BY_NAME[name])
            except CaseSkipped as skipped:
                _OUTCOMES[name] = skipped
        found = _OUTCOMES[name]
        if isinstance(found, CaseSkipped):
            pytest.skip(f"lab case {name}: {found}")
        busy = found.crowded()
        if busy is not None:
            pytest.skip(f"lab case {name}: {busy}")
        return found

    return outcome
