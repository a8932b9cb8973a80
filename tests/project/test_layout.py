"""The folders tell the architecture: every module sits in a layer of the import contracts, no two modules share a
name where a reader would open the wrong one, and tests/ mirrors the package, so a module's tests are found by its
path."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gputui"
LAYERS_CONTRACT = "Layers: views above the session, the session above sources and diagnostics, all above the model"
# Folders whose modules are named by a convention of the folder, so that a name repeats one elsewhere without
# confusion: a command's module is named for the command, a rule family's for its family, a widget or a screen
# for what it shows, and each kind of source keeps its Source in source.py. The history store keeps a recording's
# records, and its reader and writer are named as the recording's are (gputui.store.reader, gputui.store.writer).
NAMED_BY_FOLDER = ("commands", "diagnostics/rules", "ui/widgets", "ui/screens", "store")
SOURCE_MODULE = "source.py"


def _contract(name: str) -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["name"] == name:
            return dict(contract)
    raise AssertionError(f"pyproject.toml has no import contract named {name!r}")


def test_every_top_level_module_sits_in_a_layer() -> None:
    layers = _contract(LAYERS_CONTRACT)["layers"]
    assert isinstance(layers, list)
    placed = {name.strip() for layer in layers for name in layer.split("|")}
    present = _top_level_modules()
    assert sorted(present - placed) == [], "modules outside every layer of the import contracts"
    assert sorted(placed - present) == [], "layers that name no module"


def _top_level_modules() -> set[str]:
    return {
        f"gputui.{path.stem if path.is_file() else path.name}"
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py") or (path / "__init__.py").is_file()
    }


def test_the_agent_is_forbidden_every_other_module() -> None:
    """The in-job agent's contract lists what it may not import by name: a new top-level module joins the list."""
    forbidden = _contract("The in-job agent imports nothing of gputui")["forbidden_modules"]
    assert isinstance(forbidden, list)
    assert sorted(_top_level_modules() - {"gputui.agent", "gputui.__main__"} - set(forbidden)) == []


def _named_by_folder(relative: Path) -> bool:
    folder = relative.parent.as_posix()
    if folder in NAMED_BY_FOLDER:
        return True
    return relative.name == SOURCE_MODULE and relative.parent.parent.as_posix() == "sources"


def test_no_two_modules_share_a_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if path.name == "__init__.py" or _named_by_folder(relative):
            continue
        where[path.name].append(relative.as_posix())
    shared = {name: places for name, places in where.items() if len(places) > 1}
    assert shared == {}


# Test folders that are suites of their own rather than the mirror of a package folder: the lab's real jobs, and the
# tests of the project itself (its contracts, layout, docs, manifests).
TEST_SUITES = ("lab", "project")


def _tested_names(package: Path) -> set[str]:
    """What a test module in the mirror of `package` may be named for: one of its modules, a subpackage, or the
    package itself (a test of it as a whole)."""
    names = {path.stem for path in package.glob("*.py") if path.name != "__init__.py"}
    names |= {path.name for path in package.iterdir() if (path / "__init__.py").is_file()}
    return names | {package.name}


def test_tests_mirror_the_package() -> None:
    """tests/<folder>/test_<name>.py tests gputui/<folder>, and <name> is, or starts with `<module>_`, a module of
    that folder: a module's tests are found by its path (gputui/record/writer.py: tests/record/test_writer*.py)."""
    tests = ROOT / "tests"
    misplaced = []
    for path in sorted(tests.rglob("test_*.py")):
        relative = path.relative_to(tests)
        if relative.parts[0] in TEST_SUITES:
            continue
        package = PACKAGE.joinpath(*relative.parts[:-1])
        name = path.stem.removeprefix("test_")
        if not (package / "__init__.py").is_file():
            misplaced.append(f"{relative}: gputui has no package {package.relative_to(ROOT)}")
        elif not any(name == known or name.startswith(f"{known}_") for known in _tested_names(package)):
            misplaced.append(f"{relative}: names no module of {package.relative_to(ROOT)}")
    assert misplaced == []


def test_every_test_folder_is_a_package() -> None:
    """Tests import one another as the package `tests`; a folder without __init__.py would import under another
    name, or collide with a test module of the same name elsewhere."""
    tests = ROOT / "tests"
    folders = {path.parent for path in tests.rglob("*.py")}
    assert sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file()) == []
