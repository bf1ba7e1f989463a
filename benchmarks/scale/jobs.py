"""Background jobs vs the foreground pipeline: the same corpus indexed both ways, throughput compared.

    .venv/bin/python -m benchmarks.scale.jobs --files 200

Each run uses a fresh index; "background" is from submitting `retrievo index --background` to the job
reading done (polled in-process every 0.2 s), so it includes starting the worker process and loading the model,
as the foreground command does.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import write_notes
from retrievo.config import Config
from retrievo.store.factory import open_store

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "retrievo.surfaces.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, check=True)  # fmt: skip
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--repeats", "--rounds", dest="rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        docs = Path(scratch) / "docs"
        write_notes(docs, args.files)
        results: dict[str, list[float]] = {"foreground": [], "background": []}
        chunks = 0
        for round_ in range(args.rounds):
            for way in ("foreground", "background") if round_ % 2 == 0 else ("background", "foreground"):
                db = Path(scratch) / f"{way}-{round_}.db"
                started = time.perf_counter()
                if way == "foreground":
                    chunks = json.loads(cli("index", str(docs), "--db", str(db), "--json"))["chunks_written"]
                else:
                    job_id = json.loads(cli("index", str(docs), "--db", str(db), "--background", "--json"))[
                        "job_id"
                    ]
                    store = open_store(Config(db=db), create=False)
                    while (job := store.get_job(job_id)) is None or job.status not in ("done", "failed"):
                        time.sleep(0.2)
                    store.close()
                results[way].append(time.perf_counter() - started)
        best = {way: min(times) for way, times in results.items()}
        print(json.dumps({
            "files": args.files, "chunks": chunks, "seconds": results,
            "chunks_per_s": {way: round(chunks / s, 1) for way, s in best.items()},
            "background_share_of_foreground": round(best["foreground"] / best["background"], 3),
        }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
