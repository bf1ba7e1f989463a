"""The ``admin`` toolset: ``index_status`` (collections, baselines, jobs) and ``verify_index`` (read), and —
on a server that may write — ``refresh_index``, ``create_baseline`` and ``regenerate_embeddings`` (a job)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from retrievo.engine import Engine
from retrievo.operations.jobs import Jobs, recent_jobs, submit_refresh
from retrievo.secrets import redact
from retrievo.surfaces.mcp.calls import call
from retrievo.surfaces.mcp.schemas import BaselineOut, JobOut, RefreshOutput, StatusOutput
from retrievo.surfaces.mcp.scope import Scope
from retrievo.surfaces.mcp.toolsets import Offer
from retrievo.surfaces.serialize import report_to_dict, status_to_dict

HIDDEN_STORE = "(not shown to remote callers)"


class VerifyOutput(BaseModel):
    collection: str
    model_id: str | None
    ok: bool = Field(description="True when every check passed.")
    chunks: int
    current_chunks: int
    vectors: int
    problems: dict[str, int] = Field(description="Count per kind of problem (see `retrievo verify`).")
    examples: dict[str, list[str]]


class RegenerateOutput(BaseModel):
    job_id: str = Field(description="Follow it with index_status (jobs).")
    collection: str
    status: str


def register_admin_tools(
    server: MCPServer, engine: Engine, scope: Scope, offer: Offer, may_write: bool, shows_store: bool = True
) -> None:
    @server.tool(description="Collections (counts, model, last indexed), baselines to read at, recent jobs.")
    async def index_status(
        collection: Annotated[str | None, Field(max_length=200)] = None,
    ) -> StatusOutput:
        state = status_to_dict(await call(engine.status))
        state["db"] = redact(state["db"]) if shows_store else HIDDEN_STORE
        state["baselines"] = [asdict(b) for b in await call(engine.history.list)]
        state["jobs"] = [
            {k: v for k, v in asdict(j).items() if k in JobOut.model_fields}
            for j in await call(recent_jobs, engine)
        ]
        for job in state["jobs"]:  # an error may name a file: below its root to a remote caller
            if job.get("error"):
                job["error"] = (await call(scope.shown, job["collection"])).said(job["error"])
        if (allowed := scope.allowed) is not None:
            state["collections"] = [c for c in state["collections"] if c["name"] in allowed]
            state["baselines"] = [b for b in state["baselines"] if b["collection"] in allowed]
            state["jobs"] = [j for j in state["jobs"] if j["collection"] in allowed]
        if collection is not None:
            state["collections"] = [c for c in state["collections"] if c["name"] == collection]
            state["baselines"] = [b for b in state["baselines"] if b["collection"] == collection]
            state["jobs"] = [j for j in state["jobs"] if j["collection"] == collection]
            if not state["collections"]:
                raise ToolError(
                    f"collection {collection!r} does not exist; call index_status without it to list them"
                )
        return StatusOutput.model_validate(state)

    @server.tool(
        description="Check a collection's integrity: every chunk's hashes and offsets, its vector, and the "
        "vector index; counts per problem with examples. Read-only."
    )
    async def verify_index(collection: Annotated[str | None, Field(max_length=200)] = None) -> VerifyOutput:
        name = scope.check(collection)
        report = await call(engine.verify, name)
        shown = await call(scope.shown, name)  # an example names its file: below its root to a remote caller
        examples = {kind: [shown.said(e) for e in found] for kind, found in report.examples.items()}
        return VerifyOutput.model_validate({**asdict(report), "examples": examples, "ok": report.ok})

    if not may_write:
        return

    @server.tool(
        description="Re-index an indexed folder or file (or a path inside one) incrementally; returns what "
        "changed. Nothing outside the indexed folders can be indexed."
    )
    async def refresh_index(
        path: Annotated[str, Field(min_length=1, max_length=4096)],
        collection: Annotated[str | None, Field(max_length=200)] = None,
        background: Annotated[bool, Field(strict=True, description="Answer a job_id at once.")] = False,
    ) -> RefreshOutput:
        name = scope.check(collection)
        if background:
            job = await call(submit_refresh, engine, path, name)
            return RefreshOutput(collection=name, job_id=job.job_id, files_seen=0, documents_added=0,
                                 documents_changed=0, documents_unchanged=0, documents_removed=0, chunks_written=0,
                                 chunks_embedded=0, embeddings_missing=0, embed_error=None, skipped={},
                                 duration_s=0.0)  # fmt: skip
        report = await call(engine.refresh, path, collection=name)
        offer.forget()  # what the collections hold may have changed: the tool list is looked at again
        return RefreshOutput.model_validate(report_to_dict(report))

    @server.tool(
        description="Pin the collection's current state under a name (a baseline) to read later with "
        "read_context.baseline_id; nothing is copied."
    )
    async def create_baseline(
        name: Annotated[str, Field(min_length=1, max_length=200)],
        note: Annotated[str, Field(max_length=2000)] = "",
        collection: Annotated[str | None, Field(max_length=200)] = None,
    ) -> BaselineOut:
        baseline = await call(engine.history.create, name, scope.check(collection), note)
        return BaselineOut.model_validate(asdict(baseline))

    @server.tool(
        description="Re-embed a collection's chunks in a background job (all, only missing, only stale, or one "
        "kind), or migrate it to another embedding model without downtime (model); returns a job_id."
    )
    async def regenerate_embeddings(
        collection: Annotated[str | None, Field(max_length=200)] = None,
        only_missing: Annotated[bool, Field(strict=True)] = False,
        stale: Annotated[
            bool, Field(strict=True, description="Chunks whose key no longer matches their text.")
        ] = False,
        kinds: Annotated[list[Literal["document", "code", "record"]] | None, Field(max_length=3)] = None,
        limit: Annotated[int | None, Field(strict=True, ge=0)] = None,
        offset: Annotated[int, Field(strict=True, ge=0)] = 0,
        model: Annotated[
            str | None, Field(max_length=200, description="local, openai:NAME or ollama:NAME: a migration.")
        ] = None,
    ) -> RegenerateOutput:
        name = scope.check(collection)
        job = await call(
            Jobs(engine).submit_regenerate, name, only_missing=only_missing, stale=stale, kinds=kinds or [],
            limit=limit, offset=offset, model=model, drop_old=False,
        )  # fmt: skip
        return RegenerateOutput(job_id=job.job_id, collection=name, status=job.status)
