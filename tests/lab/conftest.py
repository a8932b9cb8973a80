"""The lab's cases run once per session: the infrastructure tests and the case tests read the same outcomes. The
last line of a run that loaded the lab says how many of its cases were judged and how many skipped."""

from __future__ import annotations

import pytest

from tests.lab.jobs import BY_NAME, CaseSkipped, Lab, Outcome, Variant, run_reads, torch_missing

# (case, variant) -> what running it gave: an outcome (judged, or crowded: skipped with the figures) or a skip.
_OUTCOMES: dict[tuple[str, Variant], Outcome | CaseSkipped] = {}


@pytest.fixture(autouse=True)
def _needs_torch() -> None:
    missing = torch_missing()
    if missing is not None:
        pytest.skip(missing)


@pytest.fixture(scope="session")
def lab() -> Lab:
    """`lab("c")`: case c's outcome, run on first use (`lab("h", "run")`: in a variant, tests/lab/jobs.py; the
    variants a case's one job is read in at once come together); the test skips with the reason where it cannot
    be staged, or with the figures where a process named there kept the machine busier than the case can bear."""

    def outcome(name: str, variant: Variant = "") -> Outcome:
        case = BY_NAME[name]
        key = (case.name, variant)
        called = f"{case.name}@{variant}" if variant else case.name
        if key not in _OUTCOMES:
            together = case.reads if variant in case.reads else (variant,)
            try:
                _OUTCOMES.update(((case.name, v), found) for v, found in run_reads(case, together).items())
            except CaseSkipped as skipped:
                _OUTCOMES.update(((case.name, v), skipped) for v in together)
        found = _OUTCOMES[key]
        if isinstance(found, CaseSkipped):
            pytest.skip(f"lab case {called}: {found}")
        busy = found.crowded()
        if busy is not None:
            pytest.skip(f"lab case {called}: {busy}")
        return found

    return outcome


def _judged(found: Outcome | CaseSkipped) -> bool:
    return isinstance(found, Outcome) and found.crowded() is None


def pytest_unconfigure(config: pytest.Config) -> None:
    """The tally, as the run's last line (after pytest's own summary): a lab that skips its cases proves less than
    its count of passed tests says."""
    skipped = sorted(
        f"{name}@{variant}" if variant else name for (name, variant), found in _OUTCOMES.items() if not _judged(found)
    )
    line = f"lab: {len(_OUTCOMES) - len(skipped)} cases ran, {len(skipped)} skipped"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line + (f" ({', '.join(skipped)})" if skipped else ""))
