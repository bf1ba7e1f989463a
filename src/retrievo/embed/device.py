"""Where the bundled model runs: ``RETRIEVO_DEVICE`` = ``auto`` (the default), ``cpu`` or ``cuda``.

``auto`` runs it on an NVIDIA GPU when PyTorch with CUDA is installed (``pip install 'retrievo[gpu]'``)
and sees one, else on the CPU (ONNX Runtime, ``embed/local.py``); ``cuda`` insists and says what is
missing; ``cpu`` never looks (and never imports PyTorch). The choice is made when the model first loads,
not when retrievo starts, so commands that never embed pay nothing for it. Both places run the same
weights and give the same vectors (cosine ≥ 0.999, ``tests/test_gpu_path.py``) under the same model id: one
index can hold both, and queries need no re-embedding.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable

from retrievo.errors import ConfigError

DEVICES = ("auto", "cpu", "cuda")


def device_setting() -> str:
    device = os.environ.get("RETRIEVO_DEVICE", "auto").strip().lower() or "auto"
    if device not in DEVICES:
        raise ConfigError(f"RETRIEVO_DEVICE must be auto, cpu or cuda, not {device!r}")
    return device


def cuda_available() -> bool:
    """Whether PyTorch is installed and sees a CUDA device (PyTorch is imported only if installed)."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def choose_device(setting: str, available: Callable[[], bool] = cuda_available) -> str:
    """``cpu`` or ``cuda`` for a ``RETRIEVO_DEVICE`` setting; ConfigError when ``cuda`` cannot be had."""
    if setting == "cpu":
        return "cpu"
    if available():
        return "cuda"
    if setting == "cuda":
        raise ConfigError(
            "RETRIEVO_DEVICE=cuda, but no CUDA device is usable here: install PyTorch with CUDA "
            "(`pip install 'retrievo[gpu]'`) on a machine with an NVIDIA GPU, or set RETRIEVO_DEVICE=auto"
        )
    return "cpu"
