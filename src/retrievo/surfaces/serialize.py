"""The JSON shape of results, shared by every surface so they never drift apart."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from retrievo.models import Chunk, Hit, IndexReport, IndexStatus, Kind, SearchResult
from retrievo.search.code.files import MAX_EVIDENCE, FileHit
from retrievo.search.records.registry import RegistryHit, RegistryResult
from retrievo.surfaces.present import shown_path


def chunk_to_dict(chunk: Chunk) -> dict[str, Any]:
    return {
        "chunk_id": chunk.chunk_id,
        "chunk_index": chunk.ordinal,  # seed 004: its place in the document, from 0
        "chunk_strategy": chunk.chunker,  # seed 004: the chunker that cut it
        "document_id": chunk.document_id,
        "collection": chunk.collection,
        "path": chunk.path,
        "title": chunk.title,
        "kind": str(chunk.kind),
        "text": chunk.text,
        "context": chunk.context,
        "start": chunk.start,
        "end": chunk.end,
        "line_start": chunk.line_start,
        "line_end": chunk.line_end,
        "revision_id": chunk.revision_id,
        "chunk_hash": chunk.chunk_hash,
        "source_hash": chunk.source_hash,
        "metadata": chunk.metadata,
    }


def hit_to_dict(hit: Hit) -> dict[str, Any]:
    data = chunk_to_dict(hit.chunk)
    data["score"], data["relevance"] = round(hit.score, 6), round(hit.relevance, 4)
    if hit.embedding_status is not None:
        data["embedding_status"] = hit.embedding_status
    if hit.model_id is not None:
        data["model_id"] = hit.model_id
    if hit.explain is not None:
        data["explain"] = explain_to_dict(hit)
        if hit.why:
            data["why"] = list(hit.why)
    via = matched_via_of(hit)
    if via is not None:
        data["matched_via"] = via
    return data


def matched_via_of(hit: Hit) -> dict[str, Any] | None:
    """How a hit was reached: its relationship, ``direct`` for any other record, None for passages."""
    if hit.matched_via is not None:
        return dataclasses.asdict(hit.matched_via)
    return {"via": "direct"} if hit.chunk.kind == Kind.RECORD else None


def explain_to_dict(hit: Hit) -> dict[str, dict[str, float]]:
    """Each arm's rank and raw score for a hit (with ``explain``)."""
    return {arm: {"rank": a.rank, "score": round(a.score, 6)} for arm, a in (hit.explain or {}).items()}


def result_to_dict(result: SearchResult) -> dict[str, Any]:
    data: dict[str, Any] = {
        "query": result.query,
        "search_mode": result.search_mode,
        "search_duration_ms": result.search_duration_ms,
        "total_results": len(result.hits),
        "results": [hit_to_dict(hit) for hit in result.hits],
    }
    if result.degraded_reason:
        data["degraded_reason"] = result.degraded_reason
    data["baseline_id"], data["as_of"] = result.baseline_id, result.as_of
    if result.coverage is not None:
        data["coverage"] = result.coverage
    if result.answerability is not None:
        data["answerability"] = result.answerability
    if result.fusion is not None:
        data["fusion"] = result.fusion
    if result.fusion_weights is not None:
        data["fusion_weights"] = {arm: round(w, 4) for arm, w in result.fusion_weights.items()}
    if result.model_id is not None:
        data["model_id"] = result.model_id
    if result.models:
        data["models"] = list(result.models)
    return data


def report_to_dict(report: IndexReport) -> dict[str, Any]:
    return {
        "collection": report.collection,
        "files_seen": report.files_seen,
        "documents_added": report.documents_added,
        "documents_changed": report.documents_changed,
        "documents_unchanged": report.documents_unchanged,
        "documents_removed": report.documents_removed,
        "chunks_written": report.chunks_written,
        "chunks_embedded": report.chunks_embedded,
        "embeddings_reused": report.embeddings_reused,
        "embeddings_missing": report.embeddings_missing,
        "embed_error": report.embed_error,
        "skipped": report.skipped_by_reason(),
        "skipped_files": [{"path": s.path, "reason": s.reason} for s in report.skipped],
        "duration_s": round(report.duration_s, 3),
    }


def status_to_dict(status: IndexStatus) -> dict[str, Any]:
    return {
        "db": status.db,
        "size_bytes": status.size_bytes,
        "collections": [
            {
                "name": c.name,
                "documents": c.documents,
                "chunks": c.chunks,
                "embedded": c.embedded,
                "missing": c.missing,
                "model_id": c.model_id,
                "dimensions": c.dimensions,
                "last_indexed": c.last_indexed,
            }
            for c in status.collections
        ],
    }


def registry_hit_to_dict(hit: RegistryHit) -> dict[str, Any]:
    """One entry with seed 001's field names: ``server_name`` / ``tool_name`` (agents: ``name``)."""
    meta = hit.meta
    common = {"description": meta.get("description"), "relevance_score": hit.relevance}
    if hit.entity_type == "server":
        tools = [{"tool_name": t["name"], "description": t["description"]} for t in hit.matching_tools]
        return {"server_name": meta.get("name"), **common, "path": meta.get("path"), "tags": meta.get("tags", []),
                "is_enabled": meta.get("is_enabled"), "matching_tools": tools, "also_at": hit.also_at or None}  # fmt: skip
    if hit.entity_type == "agent":
        skills = [s.get("name") for s in meta.get("skills") or [] if s.get("name")]
        return {"name": meta.get("name"), **common, "path": meta.get("path"), "tags": meta.get("tags", []),
                "capabilities": meta.get("capabilities", []), "skills": skills, "also_at": hit.also_at or None}  # fmt: skip
    return {"tool_name": meta.get("name"), **common, "server_path": meta.get("server_path"),
            "server_name": meta.get("server_name"), "inputSchema": meta.get("input_schema", {})}  # fmt: skip


def registry_result_to_dict(result: RegistryResult) -> dict[str, Any]:
    return {
        "query": result.query, "search_mode": result.search_mode, "profile": result.profile,
        "degraded_reason": result.degraded_reason, "servers": [registry_hit_to_dict(h) for h in result.servers],
        "agents": [registry_hit_to_dict(h) for h in result.agents], "tools": [registry_hit_to_dict(h) for h in result.tools],
        "baseline_id": result.baseline_id, "as_of": result.as_of,
    }  # fmt: skip


def document_uri(document_id: str, revision_id: str | None = None) -> str:
    """The document's address for ``get_document`` and MCP resources (``retrievo://document/ID``)."""
    base = f"retrievo://document/{document_id}"
    return f"{base}/revision/{revision_id}" if revision_id else base


def located_to_dict(found: FileHit, roots: Sequence[str]) -> dict[str, Any]:
    """One file of a ``locate`` answer, the same on every surface (CLI ``--json``, MCP, REST): its path
    relative to the indexed root, its score (its evidence over the most a file can show, 0-1, the same scale
    for every query), its role, why, its best passages and its uri."""
    return {
        "path": shown_path(found.path, roots),
        "score": round(min(1.0, found.score / MAX_EVIDENCE), 3),
        "role": found.role,
        "why": list(found.why),
        "symbols": [f"{e.symbol or 'passage'} {e.line_start}-{e.line_end}" for e in found.evidence],
        "uri": document_uri(found.document_id),
    }
