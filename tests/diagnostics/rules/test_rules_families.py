"""A rule is one place: each family module holds its rules and their words, so adding a rule touches only its
family module (and its tests and the README)."""

from __future__ import annotations

import ast
import inspect
import pkgutil
from collections.abc import Mapping
from types import ModuleType

import pytest

from gputui.diagnostics import catalog, engine, rules
from gputui.diagnostics.account_texts import TEXTS as ACCOUNT_TEXTS
from gputui.diagnostics.fleet_texts import TEXTS as FLEET_TEXTS
from gputui.diagnostics.locale import LANGS
from gputui.diagnostics.rules import FAMILIES, Family, base, cpus, software, stacks
from gputui.diagnostics.verdict_texts import TEXTS as VERDICT_TEXTS
from tests.diagnostics.test_catalog import variants


def name(family: Family | ModuleType) -> str:
    return str(family.__name__).rsplit(".", 1)[1]


def own_ids(family: Family) -> set[str]:
    """The rule ids a family speaks for: its rules, and for software the `nvml_unavailable` the engine builds."""
    ids = {rule.id for rule in family.RULES}
    return ids | {software.NVML_UNAVAILABLE} if family is software else ids


def _calls(source: object) -> list[ast.Call]:
    """The calls of a plain name (`ev(...)`, `heat_evidence(...)`) in the code of a module or function."""
    tree = ast.parse(inspect.getsource(source))
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)]


def _ev_keys(source: object) -> set[str]:
    """The literal first argument of every `ev(...)` call."""
    return {
        call.args[0].value
        for call in _calls(source)
        if call.func.id == "ev" and call.args and isinstance(call.args[0], ast.Constant)
    }


# The modules of the rules package that are no family: what families stand on.
FOUNDATIONS: tuple[ModuleType, ...] = (base, cpus, stacks)

# Evidence that helper functions state for the families that call them (thermal.py's heat_evidence); a helper
# module that states keys by name rather than as literals (stacks: one per kind of wait) lists them in
# EVIDENCE_KEYS, which its functions may state.
HELPERS = {
    function: _ev_keys(function) | getattr(module, "EVIDENCE_KEYS", frozenset())
    for module in (*FOUNDATIONS, *FAMILIES)
    for _, function in inspect.getmembers(module, inspect.isfunction)
    if function.__module__ == module.__name__
}


def stated_evidence(module: ModuleType) -> set[str]:
    """The evidence keys a module's code states: in its own `ev(...)` calls, and through the rules' helpers
    it calls (defined in base or another family)."""
    called = {call.func.id for call in _calls(module)}
    borrowed = (
        keys
        for function, keys in HELPERS.items()
        if function.__name__ in called and function.__module__ != module.__name__
    )
    return _ev_keys(module).union(*borrowed)


def stated(family: Family) -> set[str]:
    """Evidence a family's findings carry; `nvml_unavailable`'s is stated where the engine builds it."""
    keys = stated_evidence(family)
    return keys | stated_evidence(engine) if family is software else keys


def labels(table: Mapping[str, str]) -> set[str]:
    return {key.removeprefix("ev.") for key in table if key.startswith("ev.")}


def test_every_module_of_the_rules_package_is_a_registered_family() -> None:
    modules = {info.name for info in pkgutil.iter_modules(rules.__path__)} - {name(m) for m in FOUNDATIONS}
    assert {name(family) for family in FAMILIES} == modules


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("family", FAMILIES, ids=name)
def test_a_familys_rules_have_their_title_and_advice_in_its_own_module(family: Family, lang: str) -> None:
    texts = family.TEXTS[lang]
    for rule in sorted(own_ids(family)):
        titles = variants(texts, rule, "title")
        assert titles, f"{name(family)}.TEXTS[{lang!r}] has no title for {rule}"
        assert variants(texts, rule, "advice") == titles, f"{name(family)}.TEXTS[{lang!r}]: advice of {rule}"


@pytest.mark.parametrize("family", FAMILIES, ids=name)
def test_a_family_speaks_only_of_its_own_rules_and_evidence(family: Family) -> None:
    for lang in LANGS:
        for key in family.TEXTS[lang]:
            head = key.split(".")[0]
            assert head == "ev" or head in own_ids(family), f"{name(family)}.TEXTS[{lang!r}] names {key}"


def test_no_two_rules_share_an_id() -> None:
    """A rule's id is its check's name: two families' checks of one name would merge their findings and words."""
    ids = [rule.id for family in FAMILIES for rule in family.RULES]
    assert sorted(i for i in set(ids) if ids.count(i) > 1) == []
    assert all(rule.id == rule.check.__name__ for family in FAMILIES for rule in family.RULES)


def test_no_message_is_defined_twice() -> None:
    for lang in LANGS:
        tables = [
            catalog.SHARED[lang],
            catalog.PROBE_TEXTS[lang],
            VERDICT_TEXTS[lang],
            FLEET_TEXTS[lang],
            ACCOUNT_TEXTS[lang],
            *(family.TEXTS[lang] for family in FAMILIES),
        ]
        assert sum(len(table) for table in tables) == len(catalog.MESSAGES[lang]), lang


@pytest.mark.parametrize("family", FAMILIES, ids=name)
def test_every_evidence_a_family_states_has_its_label(family: Family) -> None:
    for lang in LANGS:
        known = labels(family.TEXTS[lang]) | labels(catalog.SHARED[lang])
        assert stated(family) - known == set(), (name(family), lang)


def test_an_evidence_label_lives_with_the_one_family_that_states_it_or_in_the_catalog_when_shared() -> None:
    for family in FAMILIES:
        others = set().union(*(stated(other) for other in FAMILIES if other is not family))
        own = labels(family.TEXTS["en"])
        assert own - stated(family) == set(), f"{name(family)} has labels it never states"
        assert own & others == set(), f"{name(family)} has labels other families state too: move them to the catalog"
    for key in labels(catalog.SHARED["en"]):
        users = [name(family) for family in FAMILIES if key in stated(family)]
        assert len(users) >= 2, f"ev.{key} is stated by {users} only: move it to that family"
