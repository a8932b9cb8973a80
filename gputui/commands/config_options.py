"""`--config FILE` and the options that override its settings (`--alert-webhook`, `--alert-command`, `--readonly`,
`--price`, `--currency`): the file is read once, here, and the options are laid over it as a new Config."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from gputui.argtypes import currency_name, price_per_hour
from gputui.config_values import Invalid, url
from gputui.foreign_text import clean

if TYPE_CHECKING:  # the reader and the diagnostics' settings are loaded when a command runs, not to parse
    from gputui.config import Config


def add_price_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--price",
        type=price_per_hour,
        default=None,
        metavar="AMOUNT",
        help="what a GPU-hour costs, e.g. 2.40: the time in each verdict class gets its cost "
        "(default: gpu_hour in the config's [cost] table; none, no cost)",
    )
    parser.add_argument(
        "--currency",
        type=currency_name,
        default=None,
        metavar="CODE",
        help="the price's currency, a code (USD) or a sign ($) (default: currency in [cost], else USD)",
    )


def alert_webhook(text: str) -> str:
    """--alert-webhook's type: the config's check of a webhook, whose error never repeats the URL (it may hold a
    secret)."""
    try:
        return url().read(text)
    except Invalid as exc:
        raise argparse.ArgumentTypeError(f"the alert webhook {exc}") from None


def add_config_and_alert_options(parser: argparse.ArgumentParser) -> None:
    """--config and the alert targets, for the commands that diagnose as they sample (the monitor, export)."""
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="config file: thresholds, [alerts], [cost], [monitor], [stacks] (default ~/.config/gputui/config.toml)",
    )
    parser.add_argument(
        "--alert-webhook",
        type=alert_webhook,
        default=None,
        metavar="URL",
        help="POST a JSON message when a finding opens or closes (over [alerts] webhook in the config)",
    )
    parser.add_argument(
        "--alert-command",
        default=None,
        metavar="CMD",
        help="run CMD with the alert's JSON on its stdin when a finding opens or closes (over [alerts] command)",
    )


def config_of(args: argparse.Namespace) -> Config:
    """The config file `--config` names (else the default one), with the options given over it; raises
    ConfigError. The top-level parser defines every one of these options, so every command's namespace has them.
    As root, says on stderr that the file in $HOME is not read, where one is there and no --config was given."""
    from gputui.config import default_config_path, load_config, skipped_config_path

    skipped = skipped_config_path() if args.config is None else None
    if skipped is not None:
        print(
            f"gputui: not reading {clean(str(skipped))}: as root, gputui reads its config from root's home "
            f"({default_config_path()}) or from --config FILE, never from $HOME",
            file=sys.stderr,
        )
    config = load_config(args.config)
    return with_options(
        config,
        alert_webhook=args.alert_webhook,
        alert_command=args.alert_command,
        readonly=args.readonly,
        price=args.price,
        currency=args.currency,
    )


def with_options(
    config: Config,
    *,
    alert_webhook: str | None = None,
    alert_command: str | None = None,
    readonly: bool = False,
    price: float | None = None,
    currency: str | None = None,
) -> Config:
    """`config` with each option that was given in place of the setting it overrides."""
    alerts, cost, monitor = config.alerts, config.cost, config.monitor
    if alert_webhook is not None:
        alerts = replace(alerts, webhook=alert_webhook)
    if alert_command is not None:
        alerts = replace(alerts, command=alert_command)
    if price is not None:
        cost = replace(cost, gpu_hour=price)
    if currency is not None:
        cost = replace(cost, currency=currency)
    if readonly:
        monitor = replace(monitor, readonly=True)
    return replace(config, alerts=alerts, cost=cost, monitor=monitor)
