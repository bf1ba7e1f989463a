"""`retrievo eval`: retrieval quality on a BEIR-layout dataset, every mode side by side."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from retrievo.errors import ConfigError
from retrievo.models import SearchMode
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import Table, _errors, _store_url, json_option, out


@main.command(name="eval")
@click.argument("dataset", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--db", type=click.Path(dir_okay=False, path_type=Path), help="Keep the index here (default: temporary)."
)
@click.option("--modes", default="keyword,semantic,hybrid", show_default=True, help="Comma-separated modes.")
@click.option("--limit-queries", type=click.IntRange(1), help="Only the first N judged queries (quick runs).")
@click.option(
    "--chunker",
    default="whole",
    show_default=True,
    help="auto, sentence, paragraph, markdown, code, whole, semantic, or several comma-separated "
    "(each source chunked by every one; search with --strategy to pick one)",
)
@click.option("--split", default="test", show_default=True, help="Which qrels/<split>.tsv to score.")
@click.option("--rrf-k", type=click.IntRange(1), default=60, show_default=True)
@click.option(
    "--fusion", type=click.Choice(["adaptive", "zscore", "rrf"]), default="adaptive", show_default=True
)
@_store_url
@json_option
def evaluate_command(
    dataset: Path,
    db: Path | None,
    store: str | None,
    modes: str,
    limit_queries: int | None,
    chunker: str,
    split: str,
    rrf_k: int,
    fusion: str,
    as_json: bool,
) -> None:
    """Measure retrieval quality on a BEIR-layout DATASET folder, every mode side by side."""
    from retrievo.evaluation.runner import evaluate

    chosen = [m.strip() for m in modes.split(",") if m.strip()]
    with _errors():
        for mode in chosen:
            SearchMode(mode) if mode in {m.value for m in SearchMode} else _bad_mode(mode)
        report = evaluate(
            dataset,
            db=db,
            store=store,
            modes=chosen,
            limit_queries=limit_queries,
            chunker=chunker,
            split=split,
            rrf_k=rrf_k,
            fusion=fusion,
        )
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(report), indent=2))
        return
    table = Table(
        title=f"{report.dataset}: {report.documents} documents, {report.chunks} chunks ({report.chunker}), "
        f"{report.queries} queries · indexed in {report.index_seconds:.1f}s ({report.chunks_per_second} chunks/s)"
    )
    for column in ("mode", "nDCG@10", "ECE@10", "MRR@10", "R@5", "R@10", "R@20", "R@100", "p50 ms", "p95 ms"):
        table.add_column(column, justify="right" if column != "mode" else "left")
    for scores in report.modes:
        label = scores.mode if scores.search_mode == scores.mode else f"{scores.mode} ({scores.search_mode})"
        table.add_row(
            label, f"{scores.ndcg_10:.4f}", f"{scores.ece_10:.4f}", f"{scores.mrr_10:.4f}",
            *(f"{scores.recall[k]:.4f}" for k in (5, 10, 20, 100)),
            f"{scores.latency_p50_ms:.1f}", f"{scores.latency_p95_ms:.1f}",
        )  # fmt: skip
    out.print(table)
    out.print(
        "Recall@k is the Pass@k of the Anthropic contextual-retrieval set. ECE@10: expected calibration error "
        "of the top 10 hits' relevance (0 = relevance is exactly the share of relevant hits).",
        style="dim",
    )


def _bad_mode(mode: str) -> None:
    raise ConfigError(f"unknown mode {mode!r}; choose from keyword, semantic, hybrid")
