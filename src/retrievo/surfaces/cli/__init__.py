"""The `retrievo` command line (``retrievo.surfaces.cli:main``): ``app.py`` assembles the group, each
other module is one group of commands; ``python -m retrievo.surfaces.cli`` runs it too."""

from retrievo.surfaces.cli.app import LAZY_COMMANDS, main

__all__ = ["LAZY_COMMANDS", "main"]
