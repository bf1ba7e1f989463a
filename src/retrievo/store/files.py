"""Files beside a store (side indexes): written whole, flushed to disk, then renamed into place."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
