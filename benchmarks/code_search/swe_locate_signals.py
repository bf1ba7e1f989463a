"""Each signal's share in ranking an issue's files (../shared/data/swe_loc_dev, issue 35).

Over the indexes ``benchmarks/code_search/swe_locate.py --keep DIR`` made, every issue is asked with all of
search/code/files.py's signals, then with one left out at a time (its weight set to nothing), and with the
words alone: the default hybrid search (first distinct files of 10 hits) and ``locate``. In-sample: an
upper bound of what each signal adds, not a held-out figure (``swe_locate_loro.py`` gives that).

    .venv/bin/python -m benchmarks.code_search.swe_locate_signals --keep DIR [--json FILE]
"""

from __future__ import annotations

import json
from collections.abc import Callable

from benchmarks.code_search.swe_locate import kept
from retrievo.engine import Engine
from retrievo.search.code import files

SIGNALS = ("ROLE", "DEFINES", "MODULE", "FRAME", "INNERMOST", "SEMANTIC")
LEFT_OUT: dict[str, tuple[str, ...]] = {
    "all": (),
    "without the kind of file": ("ROLE",),
    "without identifiers defined": ("DEFINES",),
    "without modules named": ("MODULE",),
    "without traceback frames": ("FRAME", "INNERMOST"),
    "without meaning (the dense arm)": ("SEMANTIC",),
    "words only": SIGNALS,
}


def main() -> None:
    args, instances, engines = kept(__doc__)
    defaults = {name: getattr(files, name) for name in SIGNALS}
    table: dict[str, dict[str, list[float]]] = {}
    for label, out in LEFT_OUT.items():
        for name, value in defaults.items():
            nothing = dict.fromkeys(value, 1.0) if name == "ROLE" else 0.0
            setattr(files, name, nothing if name in out else value)
        table[label] = {}
        systems: dict[str, Callable[[Engine, str], list[str]]] = {
            "search (hybrid)": lambda e, t: [h.chunk.path for h in e.search(t, limit=10).hits],
            "locate": lambda e, t: [f.path for f in e.locate(t, limit=10)],
        }
        for system, ask in systems.items():
            ranks = []
            for instance in instances:
                root = str((args.keep / "trees" / instance["instance_id"]).resolve()) + "/"
                paths = ask(engines[instance["instance_id"]], instance["problem_statement"])
                found = list(dict.fromkeys(p.removeprefix(root) for p in paths))
                ranks.append(next((k + 1 for k, f in enumerate(found) if f in instance["gold_files"]), 99))
            table[label][system] = [round(sum(r <= k for r in ranks) / len(ranks), 3) for k in (1, 5, 10)]
        print(label, table[label], flush=True)
    if args.json:
        args.json.write_text(json.dumps({"instances": len(instances), "table": table}, indent=1))


if __name__ == "__main__":
    main()
