"""The command line's argparse Namespace stops at the commands: what lies below them (the session, the alerts, the
probes...) takes typed options, built in gputui/commands/ from the Namespace, so that a misspelt option is a type
error and not a getattr default. The probe worker parses its own argv in its main into a ProbeOptions."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gputui"
# Where the command line is parsed and read: the commands and the entry point.
ALLOWED = ("commands/", "cli.py")
NAMESPACE = re.compile(r"\bargparse\.Namespace\b|\bfrom\s+argparse\s+import\b[^\n]*\bNamespace\b")


def test_no_module_below_the_commands_takes_an_argparse_namespace() -> None:
    below = [
        path for path in sorted(PACKAGE.rglob("*.py")) if not path.relative_to(PACKAGE).as_posix().startswith(ALLOWED)
    ]
    assert len(below) > 100  # the package was found, and walked
    mentions = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in below
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if NAMESPACE.search(line)
    ]
    assert mentions == []


def test_the_check_finds_a_namespace_where_there_is_one() -> None:
    assert NAMESPACE.search("def run(args: argparse.Namespace) -> int:")
    assert NAMESPACE.search("from argparse import ArgumentParser, Namespace")
    assert not NAMESPACE.search("import argparse  # ArgumentTypeError only")
