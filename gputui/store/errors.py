"""What goes wrong with a store, each as the sentence the user reads (the CLI prints the message as it is)."""

from __future__ import annotations


class StoreError(Exception):
    """A store that cannot be opened, created or written at all; the message says why."""


class NoStore(StoreError):
    """No history where one was looked for."""

    def __init__(self, directory: object) -> None:
        super().__init__(f"no history at {directory}: start a recorder with `gputui record` (README: Always on)")


class StoreLocked(StoreError):
    """Another recorder holds the store's lock: one writer at a time."""

    def __init__(self, directory: object, pid: int | None) -> None:
        holder = f"another recorder (PID {pid})" if pid is not None else "another recorder"
        super().__init__(f"{holder} records into {directory}")
        self.pid = pid


class NewerStore(StoreError):
    """A store (or a file in it) from a newer gputui, which this one would misread."""

    def __init__(self, directory: object, found: int, reads: int) -> None:
        super().__init__(
            f"{directory} was written by a newer gputui (store format {found}; this one reads {reads}): "
            "upgrade gputui, or choose another directory with --store"
        )
        self.found = found
