"""The code ranking's settings chosen leave-one-repository-out on ../shared/data/swe_loc_dev (issue 35).

For every setting of the grid (file-evidence weight of an issue's text, the tests' and examples' weight,
the dense arm's weight in a file's evidence) each issue is asked with the default hybrid search over indexes that
``benchmarks/code_search/swe_locate.py --keep DIR`` made; per repository, the setting best on the other three
(hit@1, then hit@5, then hit@10) is scored on it. Prints the held-out figures per repository and pooled.

    .venv/bin/python -m benchmarks.code_search.swe_locate_loro --keep DIR [--json FILE]
"""

from __future__ import annotations

import itertools
import json

from benchmarks.code_search.swe_locate import kept
from retrievo.search.code import files, intent

GRID = list(itertools.product((2.0, 4.0, 8.0), (0.5, 0.6), (0.0, 0.5, 1.0, 2.0)))
DEFAULT = (intent.FILE["issue"], files.ROLE["test"], files.SEMANTIC)


def main() -> None:
    args, instances, engines = kept(__doc__)
    roles, ranks = dict(files.ROLE), {}
    for setting in GRID:
        weight, tests, files.SEMANTIC = setting
        intent.FILE = {"issue": weight, "question": intent.FILE["question"]}
        files.ROLE = dict(roles, test=tests, example=tests)
        for instance in instances:
            name, root = (
                instance["instance_id"],
                str((args.keep / "trees" / instance["instance_id"]).resolve()),
            )
            hits = engines[name].search(instance["problem_statement"], limit=10).hits
            found = list(dict.fromkeys(h.chunk.path.removeprefix(root + "/") for h in hits))
            ranks[setting, name] = next(
                (k + 1 for k, f in enumerate(found) if f in instance["gold_files"]), 99
            )

    def hit(pairs: list[tuple[tuple[float, float, float], str]]) -> list[float]:
        return [round(sum(ranks[s, n] <= k for s, n in pairs) / len(pairs), 3) for k in (1, 5, 10)]

    result: dict[str, object] = {}
    pooled = []
    for repo in sorted({i["repo"] for i in instances}):
        train = [i["instance_id"] for i in instances if i["repo"] != repo]
        test = [i["instance_id"] for i in instances if i["repo"] == repo]
        best = max(GRID, key=lambda s: hit([(s, n) for n in train]))
        pooled += [(best, n) for n in test]
        result[repo] = {"chosen": best, "held_out": hit([(best, n) for n in test]),
                        "default": hit([(DEFAULT, n) for n in test]), "issues": len(test)}  # fmt: skip
    result["pooled held out"] = hit(pooled)
    result["default everywhere"] = hit([(DEFAULT, i["instance_id"]) for i in instances])
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
