"""The docs cannot drift: the generated references match the code, README stays short, every relative link lands on
a file, and the commit-msg hook refuses a long subject."""

from __future__ import annotations

import importlib.util
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 250
HOOK = ROOT / ".githooks" / "commit-msg"

# [text](target) and ![alt](target), the target up to a space (a title may follow) or the closing parenthesis.
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# [name]: target, a reference definition at the start of a line.
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
INDENTED_CODE = re.compile(r"(?:^(?: {4}|\t).*\n?)+", re.MULTILINE)


def load_writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("write_docs", ROOT / "scripts" / "write_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def relative_links(markdown: str) -> list[str]:
    """The link targets that name a file of this repository: not in code, not a URL, not a bare #anchor."""
    prose = CODE_SPAN.sub("", INDENTED_CODE.sub("", FENCE.sub("", markdown)))
    targets = INLINE_LINK.findall(prose) + REFERENCE_LINK.findall(prose)
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.IGNORECASE) and not t.startswith("#")]


def broken_links(path: Path) -> list[str]:
    """The relative links of `path` whose file does not exist."""
    missing = []
    for target in relative_links(path.read_text(encoding="utf-8")):
        file_part = (path.parent / target.split("#", 1)[0]).resolve()
        if not file_part.exists():
            missing.append(target)
    return missing


def doc_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_the_committed_reference_pages_are_what_the_code_writes_now() -> None:
    writer = load_writer()
    assert writer.PAGES, "write_docs.py lists no page"
    for page in writer.PAGES:
        committed = ROOT / writer.REFERENCE / page.name
        assert committed.exists(), f"{writer.REFERENCE / page.name} is missing: run `make docs` and commit it"
        assert committed.read_text(encoding="utf-8") == page.render(), (
            f"{writer.REFERENCE / page.name} is out of date with the code: run `make docs` and commit it"
        )


def test_the_reference_pages_do_not_depend_on_the_terminal_or_the_locale(monkeypatch: pytest.MonkeyPatch) -> None:
    """argparse wraps to $COLUMNS; the pages must read the same in a narrow terminal and another language."""
    writer = load_writer()
    wide = {page.name: page.render() for page in writer.PAGES}
    monkeypatch.setenv("COLUMNS", "33")
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    monkeypatch.setenv("LC_ALL", "zh_CN.UTF-8")
    assert {page.name: page.render() for page in writer.PAGES} == wide


def test_the_cli_reference_has_every_command_and_option() -> None:
    import argparse

    from gputui.cli import build_parser

    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    sub = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    assert sub.choices, "the parser has no commands"
    for title, command in {"gputui": parser, **{f"gputui {name}": p for name, p in sub.choices.items()}}.items():
        assert f"## `{title}`" in page, f"`{title}` has no section in the CLI reference"
        for action in command._actions:
            if action.help == argparse.SUPPRESS:  # an option only gputui itself passes (record's detached child)
                continue
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in page, f"{option} of `{title}` is missing from the CLI reference"


def test_the_rule_catalog_names_every_rule() -> None:
    from gputui.diagnostics.fleet_rules import FLEET_RULE_IDS
    from gputui.diagnostics.rules import RULE_IDS

    page = (ROOT / "docs" / "reference" / "rules.md").read_text(encoding="utf-8")
    for rule in (*sorted(RULE_IDS), *FLEET_RULE_IDS):
        assert f"### `{rule}`" in page, f"rule {rule} has no section in the rule catalog"


def test_the_config_reference_has_every_table_and_key() -> None:
    """Each table of the Config and each of its keys, with the default the file would write: a key added to a
    section's dataclass shows up here, and one left out of the page fails."""
    from gputui.config import sections

    page = (ROOT / "docs" / "reference" / "config.md").read_text(encoding="utf-8")
    found = list(sections())
    assert {s.name for s in found} >= {"diagnostics", "diagnostics.thresholds", "stacks", "alerts", "cost", "monitor"}
    for section in found:
        assert f"## [{section.name}]" in page, f"[{section.name}] has no section in the config reference"
        for setting in section.settings:
            assert f"| `{setting.key}` |" in page, f"{section.name}.{setting.key} is missing from the config reference"


def test_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines, at most {README_MAX_LINES}: move detail to docs/"
    )


def test_every_relative_link_points_at_a_file() -> None:
    files = doc_files()
    assert len(files) > 10, "README.md, CONTRIBUTING.md and docs/ are not all there"
    checked = sum(len(relative_links(path.read_text(encoding="utf-8"))) for path in files)
    assert checked > 50, f"only {checked} relative links found: the link finder is broken"
    broken = {path.relative_to(ROOT).as_posix(): broken_links(path) for path in files}
    assert {name: targets for name, targets in broken.items() if targets} == {}


def test_the_link_finder_sees_links_and_skips_code_and_urls(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("x", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md) [anchor](there.md#part) ![img](gone.svg) [web](https://example.com/x) [self](#top)\n"
        "`[code](nowhere.md)`\n\n```\n[fenced](nowhere.md)\n```\n\n    [indented](nowhere.md)\n\n"
        "[ref]: missing/file.md\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["gone.svg", "missing/file.md"]


def run_hook(tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(HOOK), str(path)], capture_output=True, text=True, timeout=30, check=False
    )


def test_the_commit_msg_hook_refuses_a_subject_over_72_characters(tmp_path: Path) -> None:
    assert os.stat(HOOK).st_mode & stat.S_IXUSR, "git runs only an executable hook"
    refused = run_hook(tmp_path, "docs: " + "x" * 67 + "\n\nThe body may be as long as it likes.\n")
    assert refused.returncode == 1
    assert "73 characters" in refused.stderr


def test_the_commit_msg_hook_lets_72_characters_comments_and_fixups_through(tmp_path: Path) -> None:
    assert run_hook(tmp_path, "docs: " + "x" * 66 + "\n\n" + "y" * 200 + "\n").returncode == 0
    # A subject of 72 characters of Chinese: characters counted, not UTF-8 bytes.
    assert run_hook(tmp_path, "文" * 72 + "\n").returncode == 0
    # Git's comments come before the message is cleaned up; the first real line is the subject.
    assert run_hook(tmp_path, "# " + "c" * 100 + "\n\nshort subject\n").returncode == 0
    assert run_hook(tmp_path, "fixup! " + "z" * 80 + "\n").returncode == 0
