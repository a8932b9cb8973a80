"""The package's folders tell its architecture: every module sits in a layer of the import contracts, and no two
modules share a name where a reader would open the wrong one."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gputui"
LAYERS_CONTRACT = "Layers: views above the session, the session above sources and diagnostics, all above the model"
# Folders whose modules are named by a convention of the folder, so that a name repeats one elsewhere without
# confusion: a command's module is named for the command, a rule family's for its family, a widget or a screen
# for what it shows, and each kind of source keeps its Source in source.py.
NAMED_BY_FOLDER = ("commands", "diagnostics/rules", "ui/widgets", "ui/screens")
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
    present = {
        f"gputui.{path.stem if path.is_file() else path.name}"
        for path in PACKAGE.iterdir()
        if (path.suffix == ".py" and path.name != "__init__.py") or (path / "__init__.py").is_file()
    }
    assert sorted(present - placed) == [], "modules outside every layer of the import contracts"
    assert sorted(placed - present) == [], "layers that name no module"


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
