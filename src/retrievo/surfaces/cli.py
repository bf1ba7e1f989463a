"""The `retrievo` command line: a thin layer over ``retrievo.Engine``. The core commands (search,
status, mcp, context, eval) live here; the others in ``cli_*.py``, all registering on ``main`` from
``cli_base``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from retrievo.errors import ConfigError
from retrievo.models import SearchMode
from retrievo.surfaces.cli_base import (
    LAZY_COMMANDS,
    Table,
    _engine,
    _errors,
    _print_result,
    _store_url,
    collection_option,
    db_option,
    filters_from_pairs,
    json_option,
    main,
    out,
    point_options,
    result_to_dict,
    status_to_dict,
)

if TYPE_CHECKING:
    pass

__all__ = ["LAZY_COMMANDS", "main"]


@main.command()
@click.argument("query")
@db_option
@collection_option
@click.option("--limit", "-n", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--mode", type=click.Choice([m.value for m in SearchMode]), default="hybrid", show_default=True)
@click.option(
    "--filter",
    "filters",
    multiple=True,
    help="KEY=VALUE: kind, path (glob), tag, date_from, date_to, or metadata.",
)
@click.option(
    "--min-score", type=click.FloatRange(0, 1), help="Drop hits whose relevance (0-1) is below this."
)
@click.option("--explain", is_flag=True, help="Show each arm's rank and raw score, and the fusion's weights.")
@click.option(
    "--fusion",
    type=click.Choice(["adaptive", "zscore", "rrf"]),
    help="Hybrid fusion (default adaptive; $RETRIEVO_FUSION).",
)
@click.option("--group", type=click.Choice(["file"]), help="One row per file, its passages aggregated.")
@point_options
@json_option
def search(
    query: str,
    db: Path | None,
    store: str | None,
    collection: str | None,
    limit: int,
    mode: str,
    filters: tuple[str, ...],
    min_score: float | None,
    explain: bool,
    fusion: str | None,
    group: str | None,
    baseline: str | None,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Search an index by meaning and by keyword (now, or at a baseline or time)."""
    with _errors():
        engine = _engine(db, collection, store=store, fusion=fusion)
        # Loading the model is timed apart, so the search time shown is the search's own.
        load_ms = engine.warm_up() if mode != SearchMode.KEYWORD else 0.0
        result = engine.search(
            query,
            limit=max(limit, 50) if group else limit,  # distinct files count against limit
            mode=mode,
            filters=filters_from_pairs(filters),
            min_score=min_score,
            explain=explain,
            baseline=baseline,
            as_of=as_of,
        )
        if group:
            from retrievo.surfaces.cli_code import print_files

            print_files(result, limit, as_json)
        elif as_json:
            data = {**result_to_dict(result), "model_load_ms": round(load_ms, 1)}
            click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        else:
            _print_result(result, explain, load_ms, engine.roots())


@main.command()
@db_option
@json_option
def status(db: Path | None, store: str | None, as_json: bool) -> None:
    """Show collections, documents, chunks, embedded and missing vectors."""
    with _errors():
        state = _engine(db, None, store=store).status()
        if as_json:
            click.echo(json.dumps(status_to_dict(state), indent=2))
            return
        table = Table(title=f"{state.db} ({state.size_bytes / 1e6:.1f} MB)")
        for column in ("collection", "documents", "chunks", "embedded", "missing", "model", "last indexed"):
            table.add_column(column)
        for c in state.collections:
            table.add_row(
                c.name, str(c.documents), str(c.chunks), str(c.embedded), str(c.missing),
                f"{c.model_id or '-'} ({c.dimensions or '-'}d)", c.last_indexed or "-",
            )  # fmt: skip
        out.print(table)


@main.command()
@db_option
@click.option(
    "--collection",
    "-c",
    "collections",
    multiple=True,
    help="Serve only this collection (repeat for several; default: all). The first is the default one.",
)
@click.option(
    "--no-refresh", is_flag=True, help="Leave out the refresh_index tool: clients cannot trigger indexing."
)
@click.option(
    "--watch",
    "watch_paths",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Index this path and keep it current while serving (repeatable).",
)
@click.option("--http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="HTTP port.")
@click.option(
    "--tools",
    "toolsets",
    default="auto",
    show_default=True,
    help="Toolsets to offer, comma-separated: docs, library, similar, code, records, registry, admin (status, "
    "refresh, baselines, verify, re-embed); auto = all but similar and admin; all. A kind's tools appear once "
    "indexed.",
)
def mcp(
    db: Path | None,
    store: str | None,
    collections: tuple[str, ...],
    no_refresh: bool,
    watch_paths: tuple[Path, ...],
    http: bool,
    host: str,
    port: int,
    toolsets: str,
) -> None:
    """Serve the index to MCP clients (stdio by default; --http for streamable HTTP at /mcp).

    Clients read only what was indexed, only in the collections served; refresh_index re-reads
    only indexed folders (or is left out with --no-refresh).
    """
    from retrievo.surfaces.mcp_server import serve
    from retrievo.surfaces.mcp_toolsets import parse_toolsets

    with _errors():
        picked = parse_toolsets(toolsets)
        engine = _engine(db, collections[0] if collections else None, store=store)
        if watch_paths:
            from retrievo.operations.watch import Watcher

            engine.index(list(watch_paths))
            Watcher(engine, watch_paths).start()
        serve(
            engine,
            http=http,
            host=host,
            port=port,
            collections=collections or None,
            allow_refresh=not no_refresh,
            toolsets=picked,
        )


@main.command()
@click.argument("query")
@db_option
@collection_option
@click.option("--max-tokens", type=click.IntRange(1, 1_000_000), default=4000, show_default=True)
@click.option("--neighbors", type=click.IntRange(0, 10), default=1, show_default=True)
@click.option("--filter", "filters", multiple=True, help="KEY=VALUE, as for search.")
@point_options
@json_option
def context(
    query: str,
    db: Path | None,
    store: str | None,
    collection: str | None,
    max_tokens: int,
    neighbors: int,
    filters: tuple[str, ...],
    baseline: str | None,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Print the best evidence for QUERY packed under a token budget, with numbered citations."""
    with _errors():
        assembled = _engine(db, collection, store=store).context(
            query, max_tokens=max_tokens, neighbors=neighbors, filters=filters_from_pairs(filters),
            baseline=baseline, as_of=as_of,
        )  # fmt: skip
        if as_json:
            data = dataclasses.asdict(assembled)
            click.echo(json.dumps(data, indent=2, ensure_ascii=False))
            return
        click.echo(assembled.text)
        click.echo(f"\n({assembled.tokens}/{assembled.max_tokens} tokens, {assembled.search_mode})", err=True)


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


__all__ = ["LAZY_COMMANDS", "main"]

if __name__ == "__main__":
    # Run as a module, this file is __main__; the commands other modules register are on the
    # package's ``retrievo.surfaces.cli.main``.
    from retrievo.surfaces.cli import main as package_main

    package_main()
