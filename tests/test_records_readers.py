"""Model readers on real files nobody here wrote, on the documented JSON graph, and on hostile XML."""

from __future__ import annotations

import json

import pytest

from conftest import SHARED_DATA
from retrievo.errors import SourceError
from retrievo.ingest.records.layers import layer_of
from retrievo.ingest.records.readers import read_model, sniff

ARCHIMATE = SHARED_DATA / "archimate"
pytestmark = pytest.mark.skipif(not ARCHIMATE.exists(), reason="../shared/data not present")


def test_archisurance_in_both_formats() -> None:
    exchange = read_model((ARCHIMATE / "opengroup-xmlexchange" / "archisurance.xml").read_bytes(), "x")
    archi = read_model((ARCHIMATE / "opengroup-xmlexchange" / "archisurance.archimate").read_bytes(), "x")
    assert (exchange.format, archi.format) == ("archimate-exchange-3", "archi")
    for model in (exchange, archi):
        assert model.name == "Archisurance" and len(model.elements) == 120 and len(model.relationships) == 178
        names = {e.name: e for e in model.elements}
        assert names["Register"].type == "BusinessProcess" and layer_of("BusinessProcess") == "business"
        assert any(model.views.get(e.id) for e in model.elements) and any(model.folders.values())
    register = next(e for e in exchange.elements if e.name == "Register")
    service = next(e for e in exchange.elements if e.name == "Claim Registration Service")
    assert any(
        r.type == "Realization" and r.source == register.id and r.target == service.id
        for r in exchange.relationships
    )
    assert register.id.startswith("id-"), "ids are kept exactly as the file has them"


def test_the_other_tools_exports() -> None:
    importer = ARCHIMATE / "arktect-importer"
    sparx = read_model((importer / "aoeff_3_0_sparx.xml").read_bytes(), "sparx")  # windows-1252, no xml:lang
    assert len(sparx.elements) == 97 and sparx.elements[0].id.startswith("EAID_")
    paradigm = read_model((importer / "aoeff_3_1_visual_paradigm.xml").read_bytes(), "vp")
    assert paradigm.name == "vp" and not paradigm.folders and len(paradigm.elements) == 97  # empty <name>
    undefined = read_model((importer / "aoeff_3_1.xml").read_bytes(), "x")
    assert undefined.warnings and "undefined definitions" in undefined.warnings[0]
    assert any(key == "Maturity" for e in undefined.elements for key, _ in e.properties)
    archi = read_model((importer / "migration_guide_3_1.archimate").read_bytes(), "x")
    uuids = [e.id for e in archi.elements if len(e.id) == 36 and e.id.count("-") == 4]
    assert uuids, "bare UUID ids are kept exactly"


def test_the_2_1_namespace_and_the_json_graph() -> None:
    old = b"""<?xml version="1.0"?><model xmlns="http://www.opengroup.org/xsd/archimate"
      xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" identifier="m"><name>Old</name>
      <elements><element identifier="a" xsi:type="InfrastructureService"><label>Hosting</label><name>Hosting</name></element>
      <element identifier="b" xsi:type="Node"><name>Server</name></element></elements>
      <relationships><relationship identifier="r" source="b" target="a" xsi:type="Realization"/></relationships></model>"""
    model = read_model(old, "x")
    assert model.format == "archimate-exchange-2.1" and layer_of(model.elements[0].type) == "technology"
    graph = {"name": "CMDB", "elements": [{"id": "s1", "type": "Service", "name": "Billing", "layer": "Application",
             "properties": {"owner": "finance"}}, {"id": "d1", "type": "Database", "name": "Ledger"}],
             "relationships": [{"id": "e1", "type": "Access", "source": "s1", "target": "d1"}]}  # fmt: skip
    for data in (
        json.dumps(graph).encode(),
        "\n".join(json.dumps(r) for r in graph["elements"] + graph["relationships"]).encode(),
    ):  # type: ignore[operator]
        parsed = read_model(data, "cmdb")
        assert sniff(data) == "json" and len(parsed.elements) == 2 and parsed.relationships[0].target == "d1"
        assert parsed.elements[0].layer == "application" and parsed.elements[0].properties == (
            ("owner", "finance"),
        )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
         b'<model xmlns="http://www.opengroup.org/xsd/archimate/3.0/"><name>&lol2;</name></model>', "refused XML"),
        (b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
         b'<model xmlns="http://www.opengroup.org/xsd/archimate/3.0/"><name>&x;</name></model>', "refused XML"),
        (b'<?xml version="1.0"?><model xmlns="http://www.opengroup.org/xsd/archimate/3.0/"><elements><element', "malformed XML"),
        (b'{"elements": [', "malformed JSON"),
        (b"<html><body>not a model</body></html>", "not a model"),
    ],
)  # fmt: skip
def test_hostile_and_broken_input_is_refused_with_a_reason(data: bytes, reason: str) -> None:
    with pytest.raises(SourceError, match=reason):
        read_model(data, "x")


def test_a_model_nested_thousands_of_folders_deep_keeps_a_bounded_folder_path() -> None:
    """The folder path was rebuilt at every level (80,000 levels: 14.5 s of CPU); it now keeps 32 levels."""
    from retrievo.ingest.records.readers import MAX_FOLDER_DEPTH

    depth = 20_000
    head = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<archimate:model xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'
        b' xmlns:archimate="http://www.archimatetool.com/archimate" name="Deep" id="m">'
    )
    folders = b"".join(b'<folder name="f%d" id="d%d">' % (i, i) for i in range(depth))
    element = b'<element xsi:type="archimate:BusinessActor" name="Clerk" id="e1"/>'
    shallow = b'<folder name="Top" id="t"><element xsi:type="archimate:BusinessRole" name="Agent" id="e2"/></folder>'
    data = head + shallow + folders + element + b"</folder>" * depth + b"</archimate:model>"
    model = read_model(data, "deep.archimate")
    assert {e.name for e in model.elements} == {"Clerk", "Agent"}
    deep = model.folders["e1"]
    assert len(deep) == MAX_FOLDER_DEPTH and deep[:2] == ("f0", "f1") and deep[-1] == "…"
    assert model.folders["e2"] == ("Top",)
