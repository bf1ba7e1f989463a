"""``python -m retrievo.surfaces.cli``: the `retrievo` command."""

from retrievo.surfaces.cli import main

main()
