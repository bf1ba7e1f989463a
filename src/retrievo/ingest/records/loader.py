"""A model file → one record document per element (``kind = "record"``), cited as ``path#element-id``."""

from __future__ import annotations

from pathlib import Path

from retrievo.ingest.records.chunks import display_name, element_chunks, relationship_chunks
from retrievo.ingest.records.layers import verbs_of
from retrievo.ingest.records.model import Model
from retrievo.ingest.records.readers import read_model
from retrievo.models import Kind, LoadedDocument, Section

MODEL_SUFFIXES = frozenset({".xml", ".archimate", ".json", ".jsonl"})
RECORD_MEDIA_TYPE = "application/x-model-element"


def element_source(model_path: str, element_id: str) -> str:
    return f"{model_path}#{element_id}"


def relationship_source(model_path: str, relationship_id: str) -> str:
    return f"{model_path}#relationship:{relationship_id}"


def load_model_file(path: Path, data: bytes) -> tuple[Model, list[LoadedDocument]]:
    """Parse and turn every element into a record document; SourceError (with the reason) if unreadable."""
    model = read_model(data, path.stem)
    by_id = {e.id: e for e in model.elements}
    documents = []
    for chunk in element_chunks(model):
        element = chunk.element
        metadata: dict[str, object] = {
            "element_id": element.id,
            "element_name": display_name(element),  # the revision's own (the document's title is today's)
            "element_type": element.type,
            "layer": chunk.layer,
            "model": model.name,
            "model_format": model.format,
        }
        if chunk.capabilities:
            metadata["capability"] = chunk.capabilities[0]
            metadata["capabilities"] = list(chunk.capabilities)
        if model.folders.get(element.id):
            metadata["folder"] = " / ".join(model.folders[element.id])
        if model.views.get(element.id):
            metadata["views"] = model.views[element.id]
        if element.properties:
            metadata["properties"] = dict(element.properties)
        # The element's one-hop neighbourhood (the graph, per element): what getContext expands into.
        # (with the other element's name and type, so a relationship question reads no other record to choose)
        metadata["relations"] = [
            {"id": r.id, "type": r.type, "direction": "out", "element_id": r.target,
             "name": display_name(by_id[r.target]), "element_type": by_id[r.target].type} for r in chunk.outgoing
        ] + [
            {"id": r.id, "type": r.type, "direction": "in", "element_id": r.source,
             "name": display_name(by_id[r.source]), "element_type": by_id[r.source].type} for r in chunk.incoming
        ]  # fmt: skip
        documents.append(
            LoadedDocument(
                source=element_source(str(path), element.id),
                text=chunk.text,
                title=display_name(element),
                kind=Kind.RECORD,
                media_type=RECORD_MEDIA_TYPE,
                metadata=metadata,
                # One section: every chunk of the element carries its metadata (hits show it, filters use it).
                sections=(Section(0, len(chunk.text), context=display_name(element), metadata=metadata),),
            )
        )
    # Each relationship is a record of its own too (no element_id: listings of elements leave it out; a hit
    # on it is answered with the element at one of its ends, search/records/relations.py).
    for link in relationship_chunks(model):
        relation, start, end = link.relationship, link.source, link.target
        title = f"{display_name(start)} {verbs_of(relation.type)[0]} {display_name(end)}"
        about: dict[str, object] = {
            "relationship_id": relation.id, "relationship_type": relation.type,
            "source_id": start.id, "source_name": display_name(start), "source_type": start.type,
            "target_id": end.id, "target_name": display_name(end), "target_type": end.type,
            "model": model.name, "model_format": model.format,
        }  # fmt: skip
        documents.append(
            LoadedDocument(
                source=relationship_source(str(path), relation.id),
                text=link.text,
                title=title,
                kind=Kind.RECORD,
                media_type=RECORD_MEDIA_TYPE,
                metadata=about,
                sections=(Section(0, len(link.text), context=title, metadata=about),),
            )
        )
    return model, documents
