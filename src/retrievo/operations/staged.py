"""Indexing in stages: a new collection searchable by meaning in seconds, the bundled model's vectors after.

The bundled transformer embeds 20–40 chunks a second on two cores, so a repository of a few thousand
chunks used to wait minutes before its first search by meaning. When the configuration's model is the
bundled one (``RETRIEVO_EMBEDDER=local``, the default) and the collection has no vectors yet, `retrievo
index` goes in two stages:

1. the chunks are written (searchable by keyword as each file's transaction commits) and embedded by the
   static model distilled from the transformer (``embed/static.py``, about a hundred times faster): the
   collection is served by it when the command returns;
2. a background job (``operations/jobs.py``, `retrievo job ID --follow`) migrates the collection to the
   transformer (``Engine.regenerate(model=...)``): its vectors are made beside the static ones, a search
   meanwhile ranks each chunk by the best vector it has (``search/migrating.py``), and the collection
   switches in one transaction when every chunk has one (an interrupted or failed job resumes with `retrievo job resume ID`; `retrievo status` shows
   the migration); the static vectors are then deleted, unless another collection uses the static model.

A search says which models' vectors it read (``model_id``, and during the move ``models`` and each hit's
``model_id``; `retrievo status` shows the move); adaptive fusion weighs each model's arm by its own fitted bias
(``search/fusion.py``). A collection that has vectors already, another model, ``--no-embed`` or
``RETRIEVO_STAGED=off`` (``--no-staged``) index in one stage, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from retrievo.engine import Engine
from retrievo.models import IndexReport, Job
from retrievo.operations.jobs import Jobs

# The configuration's names of the two models (``embed/pool.py`` resolves them to their model ids).
TRANSFORMER, STATIC = "local", "static"


@dataclass(frozen=True)
class StagedIndex:
    """What `index` did: the report of its first stage, and the job doing the second (None: one stage)."""

    report: IndexReport
    job: Job | None = None


def in_stages(engine: Engine, collection: str | None, embed: bool, staged: bool | None = None) -> bool:
    """Whether indexing into ``collection`` goes in stages: asked (``staged``, else the configuration's
    ``staged``), embedding on, the configured model the bundled transformer, and no vectors there yet."""
    config = engine.config
    wanted = staged if staged is not None else config.staged == "on"
    if not (wanted and embed and config.embedder == TRANSFORMER):
        return False
    name = collection or config.collection
    info = engine.open_store(create=True, collection=name).get_collection(name)
    return info is None or info.model_id is None


def index_in_stages(
    engine: Engine,
    paths: Sequence[str | Path],
    collection: str | None,
    jobs: Jobs | None = None,
    **options: Any,
) -> StagedIndex:
    """Stage one with the static model (this call), stage two queued as a background migration job (on
    ``jobs``: by default a detached worker process, `retrievo job run`)."""
    name = collection or engine.config.collection
    with Engine(replace(engine.config, embedder=STATIC, collection=name)) as first:
        report = first.index(list(paths), **options)
    # Queued whenever the collection came out served by the static model, whatever stage one embedded
    # (nothing, where every vector was reused or every file skipped): never left on it with nothing moving.
    # Not where another indexer made it the bundled model's meanwhile, nor where nothing is served yet.
    store = engine.open_store(create=True, collection=name)
    info = store.get_collection(name)
    static = engine.require_model(STATIC).model_id
    if info is None or info.model_id != static or info.shadow_model_id is not None:
        return StagedIndex(report)
    # Said at once (`retrievo status`), not only once the worker starts: the collection is moving.
    target = engine.require_model(TRANSFORMER)
    store.set_shadow_model(name, target.model_id, target.dimensions)
    return StagedIndex(
        report, (jobs or Jobs(engine)).submit_regenerate(name, model=TRANSFORMER, drop_old=True)
    )


def migration(engine: Engine, collection: str) -> tuple[str, int] | None:
    """The model ``collection`` is moving to (the second stage, or `retrievo regenerate --model`) and how
    many of its chunk texts still lack that model's vector; None when it is not moving."""
    store, name = engine.collection_store(collection)
    info = store.get_collection(name)
    if info is None or info.shadow_model_id is None:
        return None
    return info.shadow_model_id, store.shadow_missing(name, info.shadow_model_id)
