"""`--config FILE` and the options that override its settings (`--alert-webhook`, `--alert-command`, `--readonly`,
`--price`, `--currency`): the file is read once, here, and the options are laid over it as a new Config.

The webhook's URL is a secret (a Slack webhook's path is its key), and a command line is visible to every user in
`ps`: it also comes from GPUTUI_ALERT_WEBHOOK, or from a file (GPUTUI_ALERT_WEBHOOK_FILE, `--alert-webhook-file`),
as the Prometheus credentials do. `--alert-webhook` wins, then `--alert-webhook-file`, then the environment, then
the config's [alerts] webhook.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from gputui.argtypes import currency_name, price_per_hour
from gputui.config_values import Invalid, url
from gputui.foreign_text import clean
from gputui.trusted_file import Trust, UntrustedFile, first_line, read_trusted

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


WEBHOOK_ENV = "GPUTUI_ALERT_WEBHOOK"
WEBHOOK_FILE_ENV = "GPUTUI_ALERT_WEBHOOK_FILE"
# A URL, and a line of comment at most: a file larger than this is not the one meant.
MAX_WEBHOOK_FILE_BYTES = 64 * 1024
# As root, the file must be root's own and unreadable by others: the URL is a secret that moving it off the command
# line means to keep, and whoever could write the file would choose where alerts go, and with them the host's name
# and every user's job details that root sees.
ROOT_WEBHOOK_FILE = Trust(
    frozenset({0}),
    stat.S_IROTH | stat.S_IWOTH | stat.S_IWGRP,
    "as root, gputui takes a webhook only from a file root owns and others can neither read nor write (chmod 600)",
)

# Not root: the user's own choice of file, which gputui reads with no more rights than the user has.
ANYONES_FILE = Trust(None, 0, "")


def alert_webhook(text: str) -> str:
    """--alert-webhook's type: the config's check of a webhook, whose error never repeats the URL (it may hold a
    secret)."""
    try:
        return url().read(text)
    except Invalid as exc:
        raise argparse.ArgumentTypeError(f"the alert webhook {exc}") from None


def add_config_option(parser: argparse.ArgumentParser) -> None:
    """--config, the one way every command names the file: each reads the whole of it through `config_of`."""
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="config file: thresholds, [alerts], [cost], [monitor], [stacks] (default: the file $GPUTUI_CONFIG names, "
        "else ~/.config/gputui/config.toml; as root, root's own, whatever $HOME says; a file another user could "
        "write is refused)",
    )


def add_config_and_alert_options(parser: argparse.ArgumentParser) -> None:
    """--config and the alert targets, for the commands that diagnose as they sample (the monitor, export)."""
    add_config_option(parser)
    webhook = parser.add_mutually_exclusive_group()
    webhook.add_argument(
        "--alert-webhook",
        type=alert_webhook,
        default=None,
        metavar="URL",
        help=f"POST a JSON message when a finding opens or closes (over [alerts] webhook in the config); every user "
        f"sees a command line in `ps`, so give a secret URL by {WEBHOOK_ENV} or a file instead",
    )
    webhook.add_argument(
        "--alert-webhook-file",
        type=Path,
        default=None,
        metavar="FILE",
        help=f"--alert-webhook's URL, read from the first line of FILE (over {WEBHOOK_ENV} and {WEBHOOK_FILE_ENV})",
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
        alert_webhook=args.alert_webhook or webhook_from(args.alert_webhook_file, os.environ),
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


def webhook_from(path: Path | None, env: Mapping[str, str]) -> str | None:
    """The webhook's URL from `--alert-webhook-file`'s `path`, else from GPUTUI_ALERT_WEBHOOK or the file
    GPUTUI_ALERT_WEBHOOK_FILE names (not both); None where none is given. Raises ConfigError, never repeating the
    URL."""
    from gputui.config import ConfigError

    source = "--alert-webhook-file"
    if path is None:
        value, named = env.get(WEBHOOK_ENV) or None, env.get(WEBHOOK_FILE_ENV) or None
        if value is not None and named is not None:
            raise ConfigError(f"both {WEBHOOK_ENV} and {WEBHOOK_FILE_ENV} are set: keep one")
        if value is not None:
            return _checked(value, WEBHOOK_ENV)
        if named is None:
            return None
        path, source = Path(named), WEBHOOK_FILE_ENV
    trust = ROOT_WEBHOOK_FILE if os.geteuid() == 0 else ANYONES_FILE
    try:
        text = read_trusted(path, trust, MAX_WEBHOOK_FILE_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{source}: cannot read {clean(str(path))}: not UTF-8 text") from None
    except UntrustedFile as exc:
        raise ConfigError(f"{source}: not reading {clean(str(path))}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read {clean(str(path))}: {exc.strerror or exc}") from None
    first = first_line(text)
    if not first:
        raise ConfigError(f"{source}: {clean(str(path))} is empty")
    return _checked(first, source)


def _checked(text: str, source: str) -> str:
    from gputui.config import ConfigError

    try:
        return url().read(text)
    except Invalid as exc:
        raise ConfigError(f"{source}: the alert webhook {exc}") from None
