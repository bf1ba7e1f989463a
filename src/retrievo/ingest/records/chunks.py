"""Contextual chunks for typed models (seed 000 §3.3): one text per element, built from its relationships.

    Register is a BusinessProcess in the Business layer.
    It realizes Claim Registration Service (BusinessService).
    It is triggered by Damage Occured (BusinessEvent).
    It belongs to the Claim Handling capability.
    Properties: owner=claims.
    Description: …

Outgoing relationships use the seed's verb phrases, incoming ones their passive forms. An element with more
than ``MAX_SENTENCES`` relationships (a hub) is summarised by relation type — "It serves 14 elements:
A (T), B (T), … and 9 more." — so its chunk still fits the model's window.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from retrievo.ingest.records.layers import (
    CAPABILITY_HOPS,
    CAPABILITY_RELATIONS,
    LAYER_NAMES,
    layer_of,
    verbs_of,
)
from retrievo.ingest.records.model import Element, Model, Relationship

MAX_SENTENCES = 12
# Relationship sentences in the chunk (the point of the template); off only to measure what they bring.
INCLUDE_RELATIONSHIPS = True
MAX_LISTED = 5
MAX_DESCRIPTION_CHARS = 1200


@dataclass(frozen=True)
class ElementChunk:
    element: Element
    layer: str
    text: str
    capabilities: tuple[str, ...]
    outgoing: tuple[Relationship, ...]
    incoming: tuple[Relationship, ...]


def element_chunks(model: Model) -> list[ElementChunk]:
    by_id = {e.id: e for e in model.elements}
    outgoing: dict[str, list[Relationship]] = defaultdict(list)
    incoming: dict[str, list[Relationship]] = defaultdict(list)
    for relation in model.relationships:
        if relation.source in by_id and relation.target in by_id:
            outgoing[relation.source].append(relation)
            incoming[relation.target].append(relation)
    chunks = []
    for element in model.elements:
        layer = element.layer or layer_of(element.type)
        capabilities = _capabilities(element.id, by_id, outgoing, incoming)
        text = _text(element, layer, outgoing[element.id], incoming[element.id], capabilities, by_id)
        chunks.append(
            ElementChunk(
                element, layer, text, capabilities, tuple(outgoing[element.id]), tuple(incoming[element.id])
            )
        )
    return chunks


@dataclass(frozen=True)
class RelationshipChunk:
    relationship: Relationship
    source: Element
    target: Element
    text: str


def relationship_chunks(model: Model) -> list[RelationshipChunk]:
    """One text per relationship whose two ends are in the model (issue 36): "Financial Application
    (ApplicationComponent, Application layer) realizes Premium Payment Service (BusinessService, Business
    layer)." — so both arms can match a question's "realizes … premium payment" directly."""
    by_id = {e.id: e for e in model.elements}
    found = []
    for relation in model.relationships:
        source, target = by_id.get(relation.source), by_id.get(relation.target)
        if source is None or target is None:
            continue
        label = f' ("{relation.name}")' if relation.name else ""
        text = (
            f"{display_name(source)} ({source.type}, {_layer_name(source)} layer) {verbs_of(relation.type)[0]} "
            f"{display_name(target)} ({target.type}, {_layer_name(target)} layer){label}."
        )
        found.append(RelationshipChunk(relation, source, target, text))
    return found


def _layer_name(element: Element) -> str:
    layer = element.layer or layer_of(element.type)
    return LAYER_NAMES.get(layer, layer.replace("_", " ").title())


def display_name(element: Element) -> str:
    return element.name.strip() or f"({element.type} {element.id})"


def _text(
    element: Element,
    layer: str,
    outgoing: list[Relationship],
    incoming: list[Relationship],
    capabilities: tuple[str, ...],
    by_id: dict[str, Element],
) -> str:
    layer_name = LAYER_NAMES.get(layer, layer.replace("_", " ").title())
    lines = [f"{display_name(element)} is a {element.type} in the {layer_name} layer."]
    phrases: list[tuple[str, Element, Relationship]] = [
        (verbs_of(r.type)[0], by_id[r.target], r) for r in outgoing
    ] + [(verbs_of(r.type)[1], by_id[r.source], r) for r in incoming]
    if not INCLUDE_RELATIONSHIPS:
        phrases = []
    if len(phrases) <= MAX_SENTENCES:
        for verb, other, relation in phrases:
            label = f' "{relation.name}"' if relation.name else ""
            lines.append(f"It {verb} {display_name(other)} ({other.type}){label}.")
    else:
        grouped: dict[str, list[Element]] = defaultdict(list)
        for verb, other, _ in phrases:
            grouped[verb].append(other)
        for verb, others in grouped.items():
            listed = ", ".join(f"{display_name(o)} ({o.type})" for o in others[:MAX_LISTED])
            more = f" and {len(others) - MAX_LISTED} more" if len(others) > MAX_LISTED else ""
            count = f"{len(others)} elements: " if len(others) > 1 else ""
            lines.append(f"It {verb} {count}{listed}{more}.")
    if capabilities and element.type != "Capability":
        lines.append(f"It belongs to the {', '.join(capabilities)} capability.")
    if element.properties:
        lines.append("Properties: " + ", ".join(f"{k}={v}" for k, v in element.properties if k) + ".")
    if element.documentation.strip():
        description = " ".join(element.documentation.split())
        cut = description[:MAX_DESCRIPTION_CHARS] + ("…" if len(description) > MAX_DESCRIPTION_CHARS else "")
        lines.append(f"Description: {cut}")
    return "\n".join(lines)


def _capabilities(
    start: str,
    by_id: dict[str, Element],
    outgoing: dict[str, list[Relationship]],
    incoming: dict[str, list[Relationship]],
) -> tuple[str, ...]:
    """Capability elements within CAPABILITY_HOPS through realization/composition/aggregation/assignment."""
    found: list[str] = []
    frontier, seen = [start], {start}
    for _ in range(CAPABILITY_HOPS):
        following = []
        for node in frontier:
            neighbours = [r.target for r in outgoing[node] if r.type.lower() in CAPABILITY_RELATIONS]
            neighbours += [r.source for r in incoming[node] if r.type.lower() in CAPABILITY_RELATIONS]
            for other in neighbours:
                if other in seen:
                    continue
                seen.add(other)
                following.append(other)
                if by_id[other].type == "Capability":
                    found.append(display_name(by_id[other]))
        frontier = following
    return tuple(dict.fromkeys(found))
