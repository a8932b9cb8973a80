"""When the user last looked at a store: written whole, only into a directory of the user's own, read back."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gputui.session.last_seen import NEVER_SEEN_S, last_seen, last_seen_path, remember, since_when


def test_the_path_follows_xdg_state_home(tmp_path: Path) -> None:
    assert last_seen_path({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "gputui" / "last-seen.json"
    assert last_seen_path({"XDG_STATE_HOME": "relative", "HOME": "/home/x"}) == Path(
        "/home/x/.local/state/gputui/last-seen.json"
    )


def test_never_seen_is_twelve_hours_ago_and_remembered_after(tmp_path: Path) -> None:
    file = tmp_path / "state" / "gputui" / "last-seen.json"
    store = tmp_path / "store"
    assert since_when(store, 100_000.0, file) == 100_000.0 - NEVER_SEEN_S
    assert remember(store, 90_000.0, file) is None
    assert since_when(store, 100_000.0, file) == 90_000.0
    assert last_seen(tmp_path / "other", file) is None
    assert os.stat(file).st_mode & 0o777 == 0o600
    assert os.stat(file.parent).st_mode & 0o777 == 0o700
    assert [p.name for p in file.parent.iterdir()] == ["last-seen.json"]  # no temporary left


def test_a_link_in_place_of_the_file_is_replaced_not_followed(tmp_path: Path) -> None:
    file = tmp_path / "gputui" / "last-seen.json"
    file.parent.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    file.symlink_to(victim)
    assert remember(tmp_path / "store", 5.0, file) is None
    assert victim.read_text() == "precious"
    assert not file.is_symlink()
    assert json.loads(file.read_text()) == {str(tmp_path / "store"): 5.0}


def test_a_linked_or_shared_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "gputui").symlink_to(elsewhere)
    refused = remember(tmp_path / "store", 5.0, tmp_path / "state" / "gputui" / "last-seen.json")
    assert refused is not None and "cannot note when you last looked" in refused
    assert list(elsewhere.iterdir()) == []
    shared = tmp_path / "shared" / "gputui"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    refused = remember(tmp_path / "store", 5.0, shared / "last-seen.json")
    assert refused is not None and "not yours alone" in refused
    assert list(shared.iterdir()) == []


def test_a_file_others_may_write_or_garbage_is_never_seen(tmp_path: Path) -> None:
    file = tmp_path / "last-seen.json"
    store = tmp_path / "store"
    file.write_text(json.dumps({str(store): 7.0}))
    file.chmod(0o666)
    assert last_seen(store, file) is None
    file.chmod(0o600)
    assert last_seen(store, file) == 7.0
    file.write_text(json.dumps({str(store): "NaN", "x": [1]}))
    assert last_seen(store, file) is None
    file.write_text("not json")
    assert last_seen(store, file) is None
