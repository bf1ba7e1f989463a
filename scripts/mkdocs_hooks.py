"""mkdocs hook: load every lazily registered CLI command, so the generated CLI reference lists them all.

`retrievo`'s group imports a command's module only when that command is asked for (fast start-up);
mkdocs-click reads the group's registered commands, so they are all imported before the pages render.
"""

from __future__ import annotations

import importlib
from typing import Any


def on_config(config: Any) -> Any:
    from retrievo.surfaces.cli import LAZY_COMMANDS, main

    for module in sorted(set(LAZY_COMMANDS.values())):
        importlib.import_module(f"retrievo.surfaces.cli.{module}")
    main.commands = dict(sorted(main.commands.items()))
    return config
