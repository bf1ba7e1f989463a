"""Readers for typed models: the Open Group ArchiMate exchange format (3.0/3.1 and 2.1), Archi's native
``.archimate`` files, and a documented generic JSON / JSONL graph. Format is detected by content.

XML goes through ``defusedxml``: a DTD with entities (billion laughs), external entities and external DTDs
are refused with a clear error; so are inputs over ``MAX_MODEL_BYTES``. Identifiers are kept exactly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from xml.etree.ElementTree import Element as XmlElement
from xml.etree.ElementTree import ParseError

from retrievo.errors import SourceError
from retrievo.ingest.records.layers import normalise_type
from retrievo.ingest.records.model import Element, Model, Relationship

MAX_MODEL_BYTES = 100 * 1024 * 1024
XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
EXCHANGE_NS = "http://www.opengroup.org/xsd/archimate"
ARCHI_NS = "http://www.archimatetool.com/archimate"


def sniff(data: bytes) -> str | None:
    """Which reader a file needs, from its first bytes: ``exchange``, ``archi``, ``json`` or None."""
    head = data[:4096].lstrip()
    if head.startswith((b"<?xml", b"<")):
        text = head.decode("latin-1")
        if EXCHANGE_NS in text and "<model" in text:
            return "exchange"
        if ARCHI_NS in text and "model" in text:
            return "archi"
        return None
    if head.startswith((b"{", b"[")):
        sample = head.decode("utf-8", "replace")
        if '"elements"' in sample or ('"source"' in sample and '"target"' in sample and '"type"' in sample):
            return "json"
    return None


def read_model(data: bytes, fallback_name: str) -> Model:
    """Parse a model file's bytes; SourceError (with the reason) for hostile or malformed input."""
    if len(data) > MAX_MODEL_BYTES:
        raise SourceError(f"model too large: {len(data)} bytes > {MAX_MODEL_BYTES}")
    kind = sniff(data)
    if kind is None:
        raise SourceError("not a model: neither ArchiMate XML nor a JSON graph")
    try:
        if kind == "json":
            model = _read_json(data, fallback_name)
        else:
            root = _parse_xml(data)
            model = (
                _read_exchange(root, fallback_name)
                if kind == "exchange"
                else _read_archi(root, fallback_name)
            )
    except RecursionError as exc:  # the parsers and readers recurse: a hostile depth is one file skipped
        raise SourceError("nested too deeply: more levels than the model reader allows") from exc
    if not model.elements:
        raise SourceError(f"no elements: nothing in this {kind} model to index (is it the whole model?)")
    return model


def _parse_xml(data: bytes) -> XmlElement:
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root: XmlElement = fromstring(data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise SourceError(
            f"refused XML: {type(exc).__name__} (entity expansion and external references are not read)"
        ) from exc
    except ParseError as exc:
        raise SourceError(f"malformed XML: {exc}") from exc
    return root


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(node: XmlElement, name: str) -> Iterator[XmlElement]:
    return (child for child in node if _local(child.tag) == name)


def _child(node: XmlElement, name: str) -> XmlElement | None:
    return next(_children(node, name), None)


def _text(node: XmlElement | None, name: str) -> str:
    """The text of ``name`` children, preferring English (``xml:lang`` absent or ``en``)."""
    if node is None:
        return ""
    values = [(c.get(XML_LANG, ""), (c.text or "").strip()) for c in _children(node, name)]
    for lang, value in values:
        if lang in ("", "en") or lang.startswith("en-"):
            return value
    return values[0][1] if values else ""


def _read_exchange(root: XmlElement, fallback_name: str) -> Model:
    namespace = root.tag[1:].split("}")[0] if root.tag.startswith("{") else ""
    version = "2.1" if namespace.rstrip("/").endswith("archimate") else "3"
    model = Model(name=_text(root, "name") or fallback_name, format=f"archimate-exchange-{version}")
    definitions: dict[str, str] = {}
    for holder_name in ("propertyDefinitions", "propertydefs"):
        for group in _children(root, holder_name):
            for definition in group:
                key = definition.get("identifier", "")
                definitions[key] = _text(definition, "name") or definition.get("name", key)
    undefined: set[str] = set()
    for group in _children(root, "elements"):
        for node in _children(group, "element"):
            identifier = node.get("identifier")
            if not identifier:
                model.warnings.append("an element without an identifier was skipped")
                continue
            properties = []
            for holder in _children(node, "properties"):
                for prop in _children(holder, "property"):
                    ref = prop.get("propertyDefinitionRef") or prop.get("identifierref") or ""
                    if ref not in definitions:
                        undefined.add(ref)
                    properties.append((definitions.get(ref, ref), _text(prop, "value")))
            model.elements.append(
                Element(identifier, normalise_type(node.get(XSI_TYPE, "Element")), _text(node, "name"),
                        _text(node, "documentation"), tuple(properties))
            )  # fmt: skip
    if undefined:
        model.warnings.append(
            f"properties refer to undefined definitions {sorted(undefined)}; their ids are kept as keys"
        )
    for group in _children(root, "relationships"):
        for node in _children(group, "relationship"):
            identifier, source, target = node.get("identifier"), node.get("source"), node.get("target")
            if identifier and source and target:
                model.relationships.append(
                    Relationship(identifier, normalise_type(node.get(XSI_TYPE, "Association")), source, target,
                                 _text(node, "name"))
                )  # fmt: skip
    for group in _children(root, "organizations"):
        _organizations(group, (), model)
    for views in _children(root, "views"):
        for diagrams in _children(views, "diagrams"):
            for view in _children(diagrams, "view"):
                _view(view, _text(view, "name") or view.get("identifier", ""), model)
    for view in _children(root, "views"):  # 2.1 puts <view> directly under <views>
        for inner in _children(view, "view"):
            _view(inner, _text(inner, "name") or inner.get("identifier", ""), model)
    return model


def _organizations(node: XmlElement, path: tuple[str, ...], model: Model) -> None:
    stack = [(node, path)]
    while stack:
        current, folder = stack.pop()
        for item in _children(current, "item"):
            ref = item.get("identifierRef") or item.get("identifierref")
            if ref:
                model.folders.setdefault(ref, folder)
            label = _text(item, "label")
            stack.append((item, _inside(folder, label) if label else folder))


# A folder path keeps this many levels (the last "…"): deeper nesting says nothing more, and a path that grew
# with it was rebuilt at every level (80,000 nested folders: 14.5 s of CPU, quadratic).
MAX_FOLDER_DEPTH = 32


def _inside(folder: tuple[str, ...], name: str) -> tuple[str, ...]:
    """The path of a folder ``name`` inside ``folder``, at most MAX_FOLDER_DEPTH levels."""
    if len(folder) >= MAX_FOLDER_DEPTH:
        return folder
    return (*folder, name if len(folder) < MAX_FOLDER_DEPTH - 1 else "…")


def _view(view: XmlElement, name: str, model: Model) -> None:
    for node in view.iter():
        ref = node.get("elementRef") or node.get("elementref")
        if ref and name not in model.views.setdefault(ref, []):
            model.views[ref].append(name)


def _read_archi(root: XmlElement, fallback_name: str) -> Model:
    model = Model(name=root.get("name") or fallback_name, format="archi")
    stack: list[tuple[XmlElement, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, folder = stack.pop()
        for child in node:
            tag = _local(child.tag)
            if tag == "folder":
                stack.append((child, _inside(folder, child.get("name", ""))))
            elif tag == "element":
                _archi_item(child, folder, model)
    return model


def _archi_item(node: XmlElement, folder: tuple[str, ...], model: Model) -> None:
    kind = normalise_type(node.get(XSI_TYPE, ""))
    identifier = node.get("id", "")
    documentation = _text(node, "documentation")
    if kind.endswith("DiagramModel") or kind == "SketchModel":
        name = node.get("name", identifier)
        for inner in node.iter():
            ref = inner.get("archimateElement")
            if ref and name not in model.views.setdefault(ref, []):
                model.views[ref].append(name)
        return
    source, target = node.get("source"), node.get("target")
    if source and target:
        model.relationships.append(Relationship(identifier, kind, source, target, node.get("name", "")))
        return
    properties = tuple((p.get("key", ""), p.get("value", "")) for p in _children(node, "property"))
    model.elements.append(Element(identifier, kind, node.get("name", ""), documentation, properties))
    model.folders[identifier] = folder


def _read_json(data: bytes, fallback_name: str) -> Model:
    """``{"name", "elements": [...], "relationships": [...]}``, or JSON lines of elements and relationships."""
    try:
        text = data.decode("utf-8-sig")
        stripped = text.lstrip()
        if stripped.startswith("{") and "\n{" not in stripped.rstrip():
            document: Any = json.loads(text)
            records = [*document.get("elements", []), *document.get("relationships", [])]
            name = str(document.get("name") or fallback_name)
        elif stripped.startswith("["):
            records, name = json.loads(text), fallback_name
        else:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
            name = fallback_name
    except (UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
        raise SourceError(f"malformed JSON graph: {exc}") from exc
    model = Model(name=name, format="json-graph")
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict) or "id" not in record or "type" not in record:
            model.warnings.append(f"record {number} has no id or type and was skipped")
            continue
        if "source" in record and "target" in record:
            model.relationships.append(
                Relationship(str(record["id"]), str(record["type"]), str(record["source"]), str(record["target"]),
                             str(record.get("name") or ""))
            )  # fmt: skip
            continue
        properties = record.get("properties") or {}
        pairs = tuple((str(k), str(v)) for k, v in properties.items()) if isinstance(properties, dict) else ()
        model.elements.append(
            Element(str(record["id"]), str(record["type"]), str(record.get("name") or ""),
                    str(record.get("documentation") or ""), pairs, str(record["layer"]).lower() if record.get("layer") else None)
        )  # fmt: skip
    return model
