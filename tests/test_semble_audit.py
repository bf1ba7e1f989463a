"""The audit of semble's annotations at their pins (``benchmarks/code_search/semble_audit.py``), on the real data."""

from __future__ import annotations

import json
import math

import pytest
from benchmarks.code_search.semble import DATA, Target, Task, load_tasks
from benchmarks.code_search.semble_audit import audit, ceiling, sound_means

pytestmark = pytest.mark.skipif(
    not (DATA / "manifest.json").exists(), reason="../shared/data/semble is not here"
)


@pytest.fixture(scope="module")
def manifest() -> dict[str, dict[str, object]]:
    repositories: dict[str, dict[str, object]] = json.loads((DATA / "manifest.json").read_text())[
        "repositories"
    ]
    return repositories


def test_a_query_scores_at_most_its_targets_present_first() -> None:
    root = DATA / "repos" / "chi"
    both = Task("q", "semantic", (Target("mux.go"), Target("middleware/cors.go")))
    best, absent = ceiling(both, root)
    assert absent == ("middleware/cors.go",)
    assert best == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert ceiling(Task("q", "semantic", (Target("middleware/cors.go"),)), root)[0] == 0.0
    assert ceiling(Task("q", "semantic", (Target("mux.go"),)), root) == (1.0, ())


def test_chi_semantic_figure_published_is_above_what_its_annotations_allow(
    manifest: dict[str, dict[str, object]],
) -> None:
    chi = audit("chi", manifest["chi"])
    semantic = chi["by_category"]["semantic"]
    assert semantic["queries"] == 11 and semantic["ceiling"] == pytest.approx(9 / 11)
    assert semantic["semble"] > semantic["ceiling"] and semantic["semble_above_ceiling"]
    assert not chi["by_category"]["symbol"]["semble_above_ceiling"]
    assert sorted(a for row in chi["absent"] for a in row["absent"]) == [
        "middleware/cors.go",
        "middleware/redirect.go",
    ]
    router = next(row for row in chi["not_defining"] if row["q"] == "Router")
    assert router["targets"] == ["mux.go"] and router["defined_in"] == ["chi.go"]


def test_a_header_that_only_includes_another_defines_nothing(manifest: dict[str, dict[str, object]]) -> None:
    fmtlib = audit("fmtlib", manifest["fmtlib"])
    forwarding = {row["q"] for row in fmtlib["forwarding"]}
    assert len(forwarding) == 6 and "basic_format_args" in forwarding
    assert all(row["forwards"] == ["include/fmt/core.h"] for row in fmtlib["forwarding"])
    wrong = {row["q"]: row["defined_in"] for row in fmtlib["not_defining"]}
    assert wrong["basic_format_args"] == ["include/fmt/base.h"]  # read as C++, not C: the header's language
    assert "formatter" not in wrong, "format.h's specialisations (formatter<T, Char>) define it too"
    assert fmtlib["absent"] == [] and fmtlib["ceiling"] == 1.0


def test_a_file_of_re_exports_forwards_a_file_of_macro_made_types_does_not(
    manifest: dict[str, dict[str, object]],
) -> None:
    fastapi = {t for row in audit("fastapi", manifest["fastapi"])["forwarding"] for t in row["forwards"]}
    assert "fastapi/websockets.py" in fastapi  # ``from starlette.websockets import WebSocket as WebSocket``
    axum = {t for row in audit("axum", manifest["axum"])["forwarding"] for t in row["forwards"]}
    # rejection.rs's types are made by macro calls: code, not a forward
    assert "axum/src/extract/rejection.rs" not in axum
    sinatra = audit("sinatra", manifest["sinatra"])
    assert sinatra["forwarding"] == [] and sinatra["not_defining"] == []  # ``def <=>(other)`` is a name too


def test_a_runs_means_over_sound_queries_leave_out_what_no_ranking_can_score(
    manifest: dict[str, dict[str, object]],
) -> None:
    audits = {repo: audit(repo, manifest[repo]) for repo in ("chi", "fmtlib")}
    tasks = {repo: load_tasks(repo) for repo in audits}
    core = {row["q"] for row in audits["fmtlib"]["forwarding"]}
    absent = {row["q"] for row in audits["chi"]["absent"]}
    zero = core | absent | {"Router"}  # what the annotations ask for that no definition-first ranking gives
    run = {
        "repositories": {
            repo: {
                "language": manifest[repo]["language"],
                "rows": [
                    {"q": t.query, "c": t.category, "ndcg10": 0.0 if t.query in zero else 1.0}
                    for t in tasks[repo]
                ],
            }
            for repo in audits
        }
    }
    means = sound_means(run, audits)
    assert means["sound"]["by_repository"]["chi"] == 1.0  # the two absent files and Router left out
    # basic_format_args left out (core.h does not define it); five core.h topics stay, at 0
    assert means["sound"]["by_repository"]["fmtlib"] == pytest.approx(14 / 19)
    assert means["sound_not_forwarding"]["by_repository"]["fmtlib"] == 1.0
    assert means["sound_not_forwarding"]["by_category"]["symbol"] == 1.0
    assert means["sound"]["by_language"] == {"cpp": pytest.approx(14 / 19), "go": 1.0}
    assert means["sound"]["mean"] == pytest.approx((14 / 19 + 1.0) / 2)
