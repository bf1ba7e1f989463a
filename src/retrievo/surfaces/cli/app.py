"""The `retrievo` command line, assembled: the ``main`` group and the table of its commands, each in the
module of this package that registers it. A command's module is imported only when the command is asked
for, so `retrievo --version` and a one-off search start fast; help lists every command.

The commands themselves are thin: parse, call one ``retrievo.Engine`` method, format (``base.py`` holds
what they share)."""

from __future__ import annotations

import importlib
import logging
import sys
from typing import TextIO

import click

# Every command: its name, and the module of this package that registers it on ``main`` when first used
# (tests/test_cli.py holds this table to what the modules register).
LAZY_COMMANDS = {
    "baseline": "history", "chunks": "collections", "collection": "collections", "context": "search",
    "daemon": "serve", "deps": "code", "docs": "collections", "document": "history", "drop-vectors": "lifecycle",
    "elements": "records", "embed": "index", "eval": "evaluate", "index": "index", "job": "jobs",
    "jobs": "jobs", "keys": "serve", "locate": "code", "mcp": "serve", "migrate": "store",
    "neighbours": "similar", "prune": "history", "regenerate": "lifecycle", "registry": "registry",
    "relations": "records", "search": "search", "serve": "serve", "similar": "similar", "status": "collections",
    "symbols": "code", "tests-for": "code", "verify": "collections", "watch": "code",
}  # fmt: skip


class LazyGroup(click.Group):
    """A group whose commands live in other modules, imported when asked for (help lists them all)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            importlib.import_module(f"retrievo.surfaces.cli.{LAZY_COMMANDS[cmd_name]}")
        return self.commands.get(cmd_name)


@click.group(cls=LazyGroup)
@click.version_option(package_name="retrievo")
@click.option(
    "-v", "--verbose", is_flag=True,
    help="Also show libraries' warnings (e.g. PDF fonts) and each registry candidate's score line.",
)  # fmt: skip
def main(verbose: bool) -> None:
    """Hybrid (BM25 + vector) retrieval over your documents, offline by default."""
    _show_progress_messages()
    if verbose:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(name)s: %(levelname)s: %(message)s"))
        logging.getLogger().addHandler(handler)
        logging.getLogger().setLevel(logging.WARNING)
        logging.getLogger("retrievo.search.records.registry").setLevel(
            logging.DEBUG
        )  # seed 001's "Score for" lines


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at the time, so swapped streams (tests, MCP) keep working."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def _show_progress_messages() -> None:
    # Long steps without a progress bar (building PostgreSQL's HNSW index after a large first load)
    # say so on stderr instead of going quiet for minutes.
    logger = logging.getLogger("retrievo")
    if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("retrievo: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


__all__ = ["LAZY_COMMANDS", "main"]
