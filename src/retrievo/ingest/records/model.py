"""A typed model as readers produce it: elements, relationships, folders and views (store-neutral)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Element:
    id: str  # exactly as the file has it: this is what gets cited
    type: str
    name: str
    documentation: str = ""
    properties: tuple[tuple[str, str], ...] = ()
    layer: str | None = None  # given by the input (generic graphs); derived from the type otherwise


@dataclass(frozen=True)
class Relationship:
    id: str
    type: str
    source: str
    target: str
    name: str = ""


@dataclass
class Model:
    name: str
    format: str  # "archimate-exchange-3", "archimate-exchange-2.1", "archi", "json-graph"
    elements: list[Element] = field(default_factory=list)
    relationships: list[Relationship] = field(default_factory=list)
    folders: dict[str, tuple[str, ...]] = field(default_factory=dict)  # element id → folder path
    views: dict[str, list[str]] = field(default_factory=dict)  # element id → names of views showing it
    warnings: list[str] = field(default_factory=list)
