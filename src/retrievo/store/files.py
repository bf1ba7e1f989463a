"""Files beside a store (side indexes): written whole, flushed to disk, then renamed into place."""

from __future__ import annotations

import os
from pathlib import Path

Generation = (
    int | str
)  # a side index's "in step" mark: changes whenever its rows may have (compared for equality)


def fsync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
