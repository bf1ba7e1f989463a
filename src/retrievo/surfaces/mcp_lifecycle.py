"""MCP tools of the embedding lifecycle: ``verify_index`` (read) and ``regenerate_embeddings`` (a job)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from retrievo.engine import Engine
from retrievo.operations.jobs import Jobs
from retrievo.surfaces.mcp_calls import call
from retrievo.surfaces.mcp_scope import Scope


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


def register_lifecycle_tools(server: MCPServer, engine: Engine, scope: Scope, may_write: bool) -> None:
    @server.tool(
        description="Check a collection's integrity: every chunk's hashes and offsets, its vector, and the "
        "vector index; counts per problem with examples. Read-only."
    )
    async def verify_index(collection: Annotated[str | None, Field(max_length=200)] = None) -> VerifyOutput:
        report = await call(engine.verify, scope.check(collection))
        return VerifyOutput.model_validate({**asdict(report), "ok": report.ok})

    if not may_write:
        return

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
