"""`retrievo eval`: metrics checked by hand and against pytrec_eval, the command on small and real data."""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval

from conftest import SHARED_DATA
from retrievo.evaluation.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k
from retrievo.evaluation.runner import evaluate

MINI = Path(__file__).parent / "data" / "minibeir"


def test_metrics_match_a_hand_computed_example() -> None:
    run = ["a", "x", "b", "y"]
    qrels = {"a": 2, "b": 1, "c": 1}
    dcg = 2 / math.log2(2) + 1 / math.log2(4)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(run, qrels, 10) == pytest.approx(dcg / ideal)
    assert recall_at_k(run, qrels, 2) == pytest.approx(1 / 3)
    assert recall_at_k(run, qrels, 10) == pytest.approx(2 / 3)
    assert mrr_at_k(["x", "b"], qrels, 10) == pytest.approx(0.5)
    assert mrr_at_k(["x", "b"], qrels, 1) == 0.0
    assert percentile([5.0, 1.0, 3.0], 0.5) == 3.0 and percentile([1.0] * 19 + [9.0], 0.95) == 1.0


def test_metrics_agree_with_pytrec_eval_on_random_runs() -> None:
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(60)]
    qrels = {
        f"q{i}": {d: rng.choice([1, 1, 2]) for d in rng.sample(docs, rng.randint(1, 6))} for i in range(40)
    }
    runs = {q: rng.sample(docs, 30) for q in qrels}
    trec_run = {q: {d: float(100 - rank) for rank, d in enumerate(ranked)} for q, ranked in runs.items()}
    oracle = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10", "recall.20", "recip_rank"})
    expected = oracle.evaluate(trec_run)
    for q, ranked in runs.items():
        assert ndcg_at_k(ranked, qrels[q], 10) == pytest.approx(expected[q]["ndcg_cut_10"], abs=1e-9)
        assert recall_at_k(ranked, qrels[q], 10) == pytest.approx(expected[q]["recall_10"], abs=1e-9)
        assert recall_at_k(ranked, qrels[q], 20) == pytest.approx(expected[q]["recall_20"], abs=1e-9)
        first_hit = next((r for r, d in enumerate(ranked, 1) if qrels[q].get(d, 0) > 0), None)
        if first_hit is not None and first_hit <= 10:
            assert mrr_at_k(ranked, qrels[q], 10) == pytest.approx(expected[q]["recip_rank"], abs=1e-9)


def test_eval_scores_every_mode_on_a_small_dataset(minilm: Any) -> None:
    report = evaluate(MINI, embedder=minilm)
    assert report.documents == 8 and report.queries == 4, "unjudged queries are not run"
    by_mode = {m.mode: m for m in report.modes}
    assert set(by_mode) == {"keyword", "semantic", "hybrid"}
    assert by_mode["hybrid"].search_mode == "hybrid"
    for scores in by_mode.values():
        assert 0.5 < scores.ndcg_10 <= 1.0
        assert scores.latency_p95_ms >= scores.latency_p50_ms > 0
    assert by_mode["hybrid"].recall[100] == by_mode["semantic"].recall[100] == 1.0
    assert by_mode["keyword"].recall[100] < 1.0, "one judged document shares no word with its query"
    assert by_mode["semantic"].mrr_10 == 1.0


def test_eval_command_prints_a_table_and_json(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "retrievo.surfaces.cli", "eval", str(MINI), "--modes", "keyword,hybrid"]
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    table = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True, env=env)
    # Off a terminal (a pipe, a log): every cell whole, not cut to 80 columns
    assert "nDCG@10" in table.stdout and "hybrid" in table.stdout and "…" not in table.stdout
    assert len(re.findall(r"\b[01]\.\d{4}\b", table.stdout)) >= 2 * 7, "each mode's scores in full"
    data = json.loads(
        subprocess.run(
            [*command, "--json", "--limit-queries", "2"],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        ).stdout
    )
    assert data["queries"] == 2 and [m["mode"] for m in data["modes"]] == ["keyword", "hybrid"]
    bad = subprocess.run(
        [*command[:-2], "--modes", "fuzzy"], capture_output=True, text=True, timeout=300, check=False
    )
    assert bad.returncode == 1 and "unknown mode" in bad.stderr
    missing = subprocess.run(
        [*command[:4], str(tmp_path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert missing.returncode == 1 and "corpus.jsonl is missing" in missing.stderr


@pytest.mark.skipif(
    not (SHARED_DATA / "scifact").is_dir(), reason="../shared/data/scifact is not beside the repository"
)
def test_keyword_ranking_on_real_scifact_matches_published_bm25() -> None:
    report = evaluate(SHARED_DATA / "scifact", modes=["keyword"])
    keyword = report.modes[0]
    assert report.documents == 5183 and report.queries == 300
    # Published BM25 on this test set: 0.679–0.690 (Anserini, bm25s, Elasticsearch).
    assert 0.67 <= keyword.ndcg_10 <= 0.72, keyword


def test_eval_runs_on_postgresql_and_honours_the_fusion(postgres_url: str) -> None:
    on_postgres = evaluate(MINI, store=postgres_url, modes=["keyword"], fusion="rrf")
    on_sqlite = evaluate(MINI, modes=["keyword"])
    assert on_postgres.fusion == "rrf" and on_postgres.modes[0].ndcg_10 == on_sqlite.modes[0].ndcg_10
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone() == (8,), (
            "the eval index is in PostgreSQL"
        )
    command = [
        sys.executable,
        "-m",
        "retrievo.surfaces.cli",
        "eval",
        str(MINI),
        "--modes",
        "keyword",
        "--json",
    ]
    subprocess.run(
        [*command, "--store", postgres_url], capture_output=True, text=True, timeout=300, check=True
    )
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM revisions").fetchone() == (8,), "the CLI reused that index"
