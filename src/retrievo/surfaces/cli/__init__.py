"""The `retrievo` command line: ``resident.py`` is where a call starts (it may hand it to the resident
process), ``app.py`` assembles the group, each other module is one group of commands;
``python -m retrievo.surfaces.cli`` runs it too. ``main`` and ``LAZY_COMMANDS`` are imported on first use,
so that a call handed over loads neither click nor the commands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrievo.surfaces.cli.app import LAZY_COMMANDS, main

__all__ = ["LAZY_COMMANDS", "main"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from retrievo.surfaces.cli import app

        return getattr(app, name)
    raise AttributeError(f"module 'retrievo.surfaces.cli' has no attribute {name!r}")
