"""How the topic re-scorer's two weights were chosen: semble's benchmark, one language left out at a time.

``search/code/topics.py`` has two weights: ``NAME`` (a file's name said by the query) and ``REPEAT`` (a file's
further passages). Over the grid below, every repository of ``../shared/data/semble`` is searched with each
pair (the harness's indexes, ``semble.py``: build them first); then for each language the pair with the best
mean over the *other* languages' repositories is scored on that language's repositories. Prints each
language's choice and held-out NDCG@10, the held-out mean, and every pair's in-sample mean.

    .venv/bin/python -m benchmarks.code_search.semble_choose [--work /tmp/semble] [--json FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path

from benchmarks.code_search.semble import DATA, load_tasks, open_index, search_once
from retrievo import Engine
from retrievo.search.code import topics

NAMES = (0.0, 0.01, 0.02, 0.04)
REPEATS = (0.25, 0.5, 0.75)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/semble"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    manifest = json.loads((DATA / "manifest.json").read_text())["repositories"]
    grid = list(itertools.product(NAMES, REPEATS))
    scores: dict[tuple[str, float, float], float] = {}
    for repo, spec in manifest.items():
        repo_root = DATA / "repos" / repo
        config, _ = open_index(repo, (repo_root / spec["benchmark_root"]).resolve(), args.work, False)
        tasks = load_tasks(repo)
        with Engine(config) as engine:
            for name, repeat in grid:
                topics.NAME, topics.REPEAT = name, repeat
                values = [search_once(engine, repo, repo_root, task)[0] for task in tasks]
                scores[(repo, name, repeat)] = statistics.mean(values)
        print(f"{repo}: searched with {len(grid)} pairs", flush=True)
    languages = {repo: spec["language"] for repo, spec in manifest.items()}
    held: dict[str, dict[str, object]] = {}
    for language in sorted(set(languages.values())):
        train = [r for r in manifest if languages[r] != language]
        best = max(grid, key=lambda pair: statistics.mean(scores[(r, *pair)] for r in train))
        for repo in (r for r in manifest if languages[r] == language):
            held[repo] = {"language": language, "chosen": best, "ndcg10": scores[(repo, *best)]}
        print(f"{language}: chose NAME {best[0]}, REPEAT {best[1]}; held out "
              + ", ".join(f"{r} {scores[(r, *best)]:.3f}" for r in manifest if languages[r] == language))  # fmt: skip
    held_mean = statistics.mean(float(h["ndcg10"]) for h in held.values())  # type: ignore[arg-type]
    print(f"held-out mean over repositories: {held_mean:.4f}")
    in_sample = {f"{n}/{r}": statistics.mean(scores[(repo, n, r)] for repo in manifest) for n, r in grid}
    for pair, value in in_sample.items():
        print(f"  NAME/REPEAT {pair}: in-sample mean {value:.4f}")
    if args.json:
        args.json.write_text(
            json.dumps({"held_out": held, "held_out_mean": held_mean, "in_sample": in_sample}, indent=1)
            + "\n"
        )


if __name__ == "__main__":
    main()
