"""An issue's title words and the messages it quotes, on and off, over mined commits (issue 59).

``code_files.TITLE`` (an issue's title line asked of the keyword arm alone) and ``MESSAGE`` (a quoted error or
warning held by one to three files) were chosen on ../shared/data/swe_loc_dev. This checks them where they
were not chosen: the mined commit → edited-files pairs (``pairs.jsonl.gz``, 29 repositories) whose message
reads like a short issue — a subject line (the title) and at least ``BODY`` words in all, or a quoted message
— asked over the keyword-only snapshot indexes ``features.py`` built (``--work``/db, each repository at its
mirror's head; the same caveat: the snapshot holds the fix). Each pair is ranked once per setting, from the
same signals; the table is the mean over repositories of hit@1/5/10 (a gold file among the first k).

    .venv/bin/python -m benchmarks.locate.signals_check [--work /tmp/loc] [--cap 60] [--json FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.locate.features import PAIRS
from retrievo.config import Config
from retrievo.engine import Engine
from retrievo.models import Filters
from retrievo.search.code import files as code_files
from retrievo.search.code.question import read_question
from retrievo.search.query import read_query

BODY = 30  # words in all (subject and body) for a message to read like a short issue
SETTINGS = {  # name: (TITLE, MESSAGE)
    "neither": (0.0, 0.0),
    "title": (code_files.TITLE, 0.0),
    "message": (0.0, code_files.MESSAGE),
    "both (shipped)": (code_files.TITLE, code_files.MESSAGE),
}
CUTOFFS = (1, 5, 10)


def issue_like() -> dict[str, list[dict[str, Any]]]:
    """The mined pairs that read like a short issue, by repository, newest first."""
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with gzip.open(PAIRS, "rt") as f:
        for line in f:
            pair = json.loads(line)
            question = read_question(read_query(pair["message"]))
            if (question.title and len(pair["message"].split()) >= BODY) or question.messages:
                by_repo[pair["repo"]].append(pair)
    return by_repo


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/loc"))
    parser.add_argument("--cap", type=int, default=60, help="pairs read per repository (newest first)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    places: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    quoting = 0
    for repo, pairs in issue_like().items():
        root = args.work / "trees" / repo.replace("/", "+")
        db = args.work / "db" / f"{repo.replace('/', '+')}.db"
        if not Path(f"{db}.done").exists():
            print(f"{repo}: no index at {db} (run benchmarks.locate.features first)", flush=True)
            continue
        prefix = str(root.resolve()) + "/"
        kept = [p for p in pairs if all((root / f).is_file() for f in p["files"])][: args.cap]
        with Engine(Config(db=db, collection="default", embedder="none")) as engine:
            store = engine._open_store(create=False)
            for pair in kept:
                question = read_question(read_query(pair["message"]))
                quoting += bool(question.messages)
                read = code_files.read_arms(store, "default", question, Filters(), None)
                signals = code_files.file_signals(store, "default", question, read)
                for setting, (title, message) in SETTINGS.items():
                    code_files.TITLE, code_files.MESSAGE = title, message
                    ranked = code_files.weigh_files(store, "default", question, signals)[:10]
                    files = [f.path.removeprefix(prefix) for f in ranked]
                    place = next((i + 1 for i, f in enumerate(files) if f in pair["files"]), 0)
                    places[repo][setting].append(place)
        code_files.TITLE, code_files.MESSAGE = SETTINGS["both (shipped)"]
        print(f"{repo}: {len(kept)} pairs, hit@1 " + ", ".join(
            f"{s} {np.mean([p == 1 for p in places[repo][s]]):.2f}" for s in SETTINGS), flush=True)  # fmt: skip
    repos = [r for r in places if places[r]["neither"]]
    table = {
        setting: {f"hit@{k}": round(float(np.mean([np.mean([0 < p <= k for p in places[r][setting]])
                                                   for r in repos])), 3) for k in CUTOFFS}
        for setting in SETTINGS
    }  # fmt: skip
    pairs_read = sum(len(places[r]["neither"]) for r in repos)
    print(
        f"{pairs_read} pairs of {len(repos)} repositories ({quoting} quote a message); mean over repositories:"
    )
    for setting, row in table.items():
        print(f"  {setting:16} " + " / ".join(f"{row[f'hit@{k}']:.3f}" for k in CUTOFFS))
    if args.json:
        args.json.write_text(json.dumps({"pairs": pairs_read, "repositories": len(repos), "quoting": quoting,
                                         "table": table}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
