"""`diagnose --price`: the account in the JSON and the text, the price from the options or the config's [cost]."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gputui.cli import main

DEMO = ("--demo", "starved-cpu", "--demo-gpus", "2", "--seconds", "30")


pytestmark = pytest.mark.usefixtures("no_user_config")


def account_of(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    main(["diagnose", "--json", *DEMO, *args])
    account: dict[str, Any] = json.loads(capsys.readouterr().out)["account"]
    return account


def test_diagnose_json_gives_each_gpu_its_seconds_per_class_and_each_class_its_cost(
    capsys: pytest.CaptureFixture[str],
) -> None:
    account = account_of(capsys, "--price", "2.40")
    assert account["window_s"] == 30
    assert [g["gpu"] for g in account["gpus"]] == [0, 1]
    for entry in account["gpus"]:
        assert sum(entry["seconds"].values()) == 30
        assert entry["seconds"]["input_bound"] >= 20
        assert entry["energy_source"] == "counter"
        assert entry["energy_j"] > 0
    input_bound = sum(g["seconds"]["input_bound"] for g in account["gpus"])
    assert account["cost"]["input_bound"] == round(input_bound / 3600 * 2.40, 2)
    assert (account["price_per_gpu_hour"], account["currency"]) == (2.40, "USD")
    assert [len(j["gpus"]) for j in account["jobs"]] == [1, 1]


def test_without_a_price_there_is_no_cost_and_no_zero(capsys: pytest.CaptureFixture[str]) -> None:
    account = account_of(capsys)
    assert not {"cost", "price_per_gpu_hour", "currency"} & set(account)
    assert sum(account["gpus"][0]["seconds"].values()) == 30


def test_the_config_cost_table_sets_the_price_and_the_options_win(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[cost]\ngpu_hour = 3.60\ncurrency = "EUR"\n')
    account = account_of(capsys, "--config", str(config))
    assert (account["price_per_gpu_hour"], account["currency"]) == (3.60, "EUR")
    account = account_of(capsys, "--config", str(config), "--price", "1.20", "--currency", "$")
    assert (account["price_per_gpu_hour"], account["currency"]) == (1.20, "$")


@pytest.mark.parametrize(
    ("table", "named"),
    [("gpu_hour = 0", "cost.gpu_hour"), ('gpu_hour = "cheap"', "cost.gpu_hour"), ("per_hour = 2", "cost.per_hour")],
)
def test_a_bad_cost_value_is_a_usage_error_naming_file_and_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, table: str, named: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[cost]\n{table}\n")
    assert main(["diagnose", *DEMO, "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert str(config) in err and named in err and "Traceback" not in err


def test_a_price_not_above_zero_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["diagnose", *DEMO, "--price", "0"])
    assert exit_.value.code == 2
    assert "must be greater than 0" in capsys.readouterr().err


def test_the_text_ends_with_where_the_time_went(capsys: pytest.CaptureFixture[str]) -> None:
    main(["diagnose", *DEMO, "--price", "2.40"])
    lines = capsys.readouterr().out.splitlines()
    heading = lines.index("Where the GPU time went (30s on 2 GPUs):")
    assert any(line.startswith("Input-bound ") and line.endswith(" at 2.40 USD") for line in lines[heading + 1 :])


def test_a_currency_with_spaces_or_digits_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["diagnose", *DEMO, "--price", "2", "--currency", "U S"])
    assert exit_.value.code == 2
    assert "not a currency code or sign" in capsys.readouterr().err


def test_the_monitor_refuses_a_bad_cost_table_before_it_starts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gputui.ui.app import GpuTuiApp

    def started(app: GpuTuiApp) -> None:
        raise AssertionError("the monitor started")

    monkeypatch.setattr(GpuTuiApp, "run", started)
    config = tmp_path / ".config" / "gputui" / "config.toml"  # the default file, under the test's HOME
    config.parent.mkdir(parents=True)
    config.write_text('[cost]\ncurrency = ""\n')
    assert main(["--demo", "healthy"]) == 2
    err = capsys.readouterr().err
    assert str(config) in err and "cost.currency" in err
