"""A registry of frozen records by name: the implementations' (``implspec``) and the simulators'
(``sims``). One place for what registering, removing and looking up a record means, so both
answer an unknown name the same way (ConfigError naming the valid ones)."""

from __future__ import annotations

from .errors import ConfigError


class Records(dict):
    """Records of one ``kind`` ("implementation", "simulator") by their ``name``, in registration order."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def register(self, record):
        """Add a record (its name must be new)."""
        if record.name in self:
            raise ConfigError(f"{self.kind} {record.name!r} is already registered")
        self[record.name] = record
        return record

    def unregister(self, name: str) -> None:
        """Remove a record added with ``register`` (tests register toys and remove them)."""
        self.pop(name)

    def get_record(self, name):
        """The record of ``name``; ConfigError naming the valid ones for an unknown name."""
        try:
            return self[name]
        except (KeyError, TypeError):
            raise ConfigError(f"unknown {self.kind} {name!r}; valid: {', '.join(self)}") from None
