"""examples/systemd/gputui-recorder.service: the recorder's unit runs a command gputui's parser accepts, restarts
on failure but not on a usage error, and its hardening leaves the GPUs' device nodes readable and the store the one
place it writes."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

from gputui.cli import build_parser
from gputui.commands import record

UNIT = Path(__file__).resolve().parents[2] / "examples" / "systemd" / "gputui-recorder.service"


def _unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # systemd's keys are case-sensitive
    parser.read_string(UNIT.read_text())
    return parser


def test_it_runs_gputui_record_into_var_lib_gputui() -> None:
    service = _unit()["Service"]
    argv = shlex.split(service["ExecStart"])
    assert argv[0] == "/opt/gputui/.venv/bin/gputui"
    args = build_parser().parse_args(argv[1:])
    assert args.func is record.run and str(args.store) == "/var/lib/gputui"
    assert args.demo is None and not args.detach  # the real driver, in the foreground systemd watches
    assert service["Type"] == "simple" and service["Restart"] == "on-failure"
    assert service["RestartPreventExitStatus"] == "2"


def test_its_hardening_writes_only_the_store_and_leaves_the_gpus_readable() -> None:
    service = _unit()["Service"]
    assert service["ProtectSystem"] == "strict" and service["ReadWritePaths"] == "/var/lib/gputui"
    assert service["StateDirectory"] == "gputui" and service["NoNewPrivileges"] == "yes"
    # Each of these closes the device nodes NVML opens (/dev/nvidia*): none may be set.
    assert not {"PrivateDevices", "DeviceAllow", "DevicePolicy", "ProtectClock"} & set(service)
    assert "CAP_SYS_PTRACE" in service["CapabilityBoundingSet"]  # the job stacks (py-spy), /proc/PID/io
