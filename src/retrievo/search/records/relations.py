"""Relationship questions over typed models, answered with the element at the other end (issue 36).

"Which application component realizes the premium payment service?" names one element (Premium Payment
Service) and asks for another: the one at the far end of a *realization* whose near end is the named one,
of type ApplicationComponent. Search alone ranks the named element first (its name is in the question);
this re-scorer reads the question (``relation_intent``), finds the element it names among the search's
record hits (by name), follows that element's relationships of the asked kind in the asked direction
(kept per element in its record's metadata, so at a baseline the point's own relations are read) and puts
the elements found first, each with ``matched_via`` saying how it was reached. "What is affected by Y" /
"what depends on Y" follow dependency edges transitively (``IMPACT_DEPTH``, at most ``MAX_IMPACT_DEPTH``).

Pure rules, no fitted constant: verbs map to ArchiMate relationship types (provides → realization or
serving, handles → assignment, uses → serving or access, follows → triggering or flow, part of →
composition or aggregation …); type words to element types ("component", "node", "who" …).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from retrievo.errors import DocumentNotFound
from retrievo.models import Chunk, Filters, Hit, Kind, MatchedVia, SearchResult
from retrievo.search.query import Query
from retrievo.search.rescore import Scope
from retrievo.store.base import Store

IMPACT_DEPTH, MAX_IMPACT_DEPTH = 2, 4
MAX_ANSWERS = 10
MAX_FRONTIER = 50  # elements of one impact level whose relations are read for the next
MIN_NAME_MATCH = 0.6  # share of the named element's words (and of the question's phrase) that must agree
STRICT_NAME_MATCH = 0.66  # with no verb recognised: a name of two words or more, whole in the question

# (pattern, [(relationship type, which end the answer is when the question reads "ANSWER verb NAMED")])
_VERBS: list[tuple[str, tuple[tuple[str, str], ...]]] = [
    (r"is assigned to|are assigned to|assigned to|plays?|fulfils?|fulfills?|fills?|takes? the role of",
     (("assignment", "source"),)),
    (r"is responsible for|are responsible for|responsible for|performs?|executes?|carr(?:y|ies) out",
     (("assignment", "source"), ("realization", "source"))),
    (r"handles?", (("assignment", "source"), ("realization", "source"))),
    (r"realiz(?:e|es|ed)|realis(?:e|es|ed)|implements?|implemented", (("realization", "source"),)),
    (r"provides?|provided|offers?|offered|delivers?|delivered|exposes?|hosts?|hosted",
     (("realization", "source"), ("serving", "source"), ("assignment", "source"))),
    (r"serves?|served|supports?|supported", (("serving", "source"), ("realization", "source"))),
    (r"uses?|used|depends? on|relies on|rely on|consumes?|needs?|calls?",
     (("serving", "target"), ("access", "source"))),
    (r"triggers?|triggered|starts?|started|initiates?|initiated|causes?|caused|leads? to",
     (("triggering", "source"), ("flow", "source"))),
    (r"follows?|(?:comes?|happens?|runs?|occurs?|starts?|is done|is next)(?: \w+)? (?:after|when|once)",
     (("triggering", "target"), ("flow", "target"))),
    (r"precedes?|comes? before|happens? before", (("triggering", "source"), ("flow", "source"))),
    (r"flows? (?:in)?to|sends?(?: \w+)? to|passes?(?: \w+)? to|feeds?", (("flow", "source"),)),
    (r"receives?(?: \w+){0,2} from|gets?(?: \w+){0,2} from", (("flow", "target"),)),
    (r"access(?:es|ed)?|reads?|writes?|creates?|updates?|stores?|modif(?:y|ies)|changes?",
     (("access", "source"),)),
    (r"is composed of|are composed of|composed of|consists? of|contains?|includes?|comprises?|"
     r"(?:is|are) made (?:up )?of|made (?:up )?of",
     (("composition", "source"), ("aggregation", "source"))),
    (r"is part of|are part of|part of|belongs? to|is a component of|makes? up",
     (("composition", "target"), ("aggregation", "target"))),
    (r"aggregates?|aggregated|groups?", (("aggregation", "source"),)),
    (r"speciali[sz](?:e|es|ed)|is a kind of|are kinds of|is a type of|are types of",
     (("specialization", "source"),)),
    (r"influences?|influenced", (("influence", "source"),)),
    (r"is associated with|are associated with|associated with|is related to|are related to|"
     r"is connected to|connected to|connects? to|linked to|links? to",
     (("association", "source"), ("association", "target"))),
]  # fmt: skip
_IMPACT = re.compile(
    r"\b(?:(?:is|are|would be|will be|gets?|get) )?(?:affected|impacted) by\b|\bdepends? on\b|\bimpact of\b|"
    r"\bwhat breaks if\b|\baffected if\b|\bimpacted if\b"
)
# What depends on an element B (and so is affected when B changes), as the answer's end of each edge: what B
# serves, realizes, is assigned to, triggers or flows to; what accesses B or is composed of or aggregates B.
IMPACT_EDGES = (
    ("serving", "target"), ("realization", "target"), ("assignment", "target"), ("triggering", "target"),
    ("flow", "target"), ("access", "source"), ("composition", "source"), ("aggregation", "source"),
)  # fmt: skip
_TYPE_WORDS: list[tuple[str, tuple[str, ...]]] = [
    (r"technology services?|infrastructure services?", ("technologyservice", "infrastructureservice")),
    (r"application services?", ("applicationservice",)),
    (r"business services?", ("businessservice",)),
    (r"application functions?", ("applicationfunction",)),
    (r"application process(?:es)?", ("applicationprocess",)),
    (r"application interfaces?", ("applicationinterface",)),
    (r"application components?|components?|applications?|apps?|systems?", ("applicationcomponent",)),
    (r"services?", ("businessservice", "applicationservice", "technologyservice", "infrastructureservice")),
    (r"nodes?|servers?|machines?|hardware", ("node", "device")),
    (r"devices?", ("device",)),
    (r"system software|software|dbms|database systems?", ("systemsoftware",)),
    (r"business process(?:es)?", ("businessprocess",)),
    (r"process(?:es)?|steps?", ("businessprocess", "applicationprocess", "technologyprocess")),
    (r"functions?", ("businessfunction", "applicationfunction", "technologyfunction")),
    (r"events?", ("businessevent", "applicationevent", "technologyevent", "implementationevent")),
    (r"actors?|departments?|organi[sz]ations?|teams?|units?", ("businessactor",)),
    (r"roles?", ("businessrole",)),
    (r"who|whom", ("businessactor", "businessrole", "businesscollaboration", "stakeholder")),
    (r"data objects?|data", ("dataobject",)),
    (r"business objects?|objects?|documents?|information", ("businessobject", "dataobject", "contract")),
    (r"interfaces?|channels?", ("businessinterface", "applicationinterface", "technologyinterface")),
    (r"artifacts?|files?", ("artifact",)),
    (r"networks?", ("communicationnetwork", "network")),
    (r"capabilit(?:y|ies)", ("capability",)),
    (r"interactions?", ("businessinteraction", "applicationinteraction", "technologyinteraction")),
    (r"collaborations?", ("businesscollaboration", "applicationcollaboration")),
    (r"contracts?|polic(?:y|ies)", ("contract", "businessobject")),
    (r"goals?|principles?|requirements?|drivers?|outcomes?",
     ("goal", "principle", "requirement", "driver", "outcome")),
    (r"work packages?|deliverables?|plateaus?", ("workpackage", "deliverable", "plateau")),
]  # fmt: skip
_WH = r"(?:which|what|who|whom|where)"
ANY_END = tuple((kind, end) for kind in (
    "realization", "serving", "assignment", "access", "triggering", "flow", "composition", "aggregation",
    "specialization", "influence", "association",
) for end in ("source", "target"))  # fmt: skip
_STOP = frozenset(
    "a an the of to for in on by and or is are was were be does do did what which who whom it its that this "
    "with from at as".split()
)


@dataclass(frozen=True)
class RelationIntent:
    """What a question asks: the elements at the ``ends`` of these relationship types, of these types."""

    ends: tuple[tuple[str, str], ...]  # (relationship type, the answer's end) in order of preference
    asked_types: tuple[str, ...]  # lower-case element types; empty: any
    named: str  # the phrase naming the known element
    impact: bool = False
    depth: int = 1
    strict: bool = False  # only elements of the asked types (no verb was recognised: any relationship)


def relation_intent(query: str, depth: int = IMPACT_DEPTH) -> RelationIntent | None:
    """Read a relationship question; None when the query does not ask one."""
    text = " ".join(re.sub(r"[?!.,;:\"“”]", " ", query.lower()).split())
    if not re.match(rf"^(?:{_WH}|list|show|name|find|give)\b", text):
        return None
    impact = _IMPACT.search(text)
    if impact and _strip(text[impact.end() :]):  # "what does X depend on" asks X's own dependencies
        named = text[impact.end() :]
        named = re.sub(
            r"^(?:changing|removing|replacing|a change to|a failure of|an outage of)\s+", "", named
        )
        named = re.sub(r"\s+(?:fails|goes down|changes|is removed|is replaced|breaks)$", "", named)
        return RelationIntent(
            IMPACT_EDGES, _asked_types(text[: impact.start()]), _strip(named), True,
            max(1, min(depth, MAX_IMPACT_DEPTH)),
        )  # fmt: skip
    for pattern, ends in _VERBS:
        # "what does NAMED verb" / "what is NAMED part of": the named element is the verb's subject
        does = re.match(
            rf"^(?P<head>{_WH}(?: \w+){{0,3}}?) (?:does|do|did|is|are) (?P<named>.+?) (?:{pattern})"
            rf"(?: do| perform| handle)?$",
            text,
        )
        if does:
            return RelationIntent(_swap(ends), _asked_types(does.group("head")), _strip(does.group("named")))
        verb = re.search(rf"\b(?:{pattern})\b", text)
        if verb is None:
            continue
        head, after = text[: verb.start()], text[verb.end() :]
        passive = re.match(r"^\s*(?:by|when|after|if|upon|on|from)\b", after) and re.search(
            r"\b(?:is|are|was|were|be|been|being|gets?)\s*$", head
        )
        if passive:
            after = re.sub(r"^\s*(?:by|when|after|if|upon|on|from)\b", "", after)
            head = re.sub(r"\b(?:is|are|was|were|be|been|being|gets?)\s*$", "", head)
        named = _strip(after)
        if not named:
            continue
        return RelationIntent(_swap(ends) if passive else ends, _asked_types(head), named)
    # No verb we know ("which application component is behind the premium payment service"): an element of
    # the asked type related in any way to the one named.
    typed = re.match(rf"^(?P<head>{_WH}(?: \w+){{1,3}}?) (?P<named>(?:is|are|does|do|for|of|in|on|at|behind|"
                     rf"with|about|around|under|handles?)\b.*)$", text)  # fmt: skip
    if typed and (asked := _asked_types(typed.group("head"))):
        return RelationIntent(ANY_END, asked, _strip(typed.group("named")), strict=True)
    return None


def _swap(ends: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple((kind, "target" if end == "source" else "source") for kind, end in ends)


def _strip(phrase: str) -> str:
    return re.sub(r"^(?:the|a|an|our|my)\s+", "", phrase.strip())


def _asked_types(head: str) -> tuple[str, ...]:
    if re.match(r"^\s*(?:who|whom)\b", head):
        head = "who"
    else:
        head = re.sub(rf"^\s*(?:{_WH}\b|(?:list|show|name|find|give)(?: me)?(?: the| all)?\b)", "", head)
    for pattern, types in _TYPE_WORDS:
        if re.search(rf"\b(?:{pattern})\b", head):
            return types
    return ()


def _stem(word: str) -> str:
    """A crude stem, enough to meet a name's word in a question: created/create, occurs/occured, policies."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _same(a: str, b: str) -> bool:
    """Two stems name the same word: equal, or one begins the other and both are long (valuate, valuation)."""
    return a == b or (min(len(a), len(b)) >= 5 and (a.startswith(b) or b.startswith(a)))


def _words(text: str) -> list[str]:
    return [_stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP]


# Words a question uses to say what kind of thing it names ("the register process"), not part of a name
_GENERIC = frozenset(_stem(w) for w in (
    "process", "service", "system", "component", "application", "node", "function", "event", "object",
    "actor", "role", "element", "interface", "device", "server", "software", "data", "business", "technology",
    "step", "activity", "department", "unit", "collaboration", "interaction", "artifact", "network",
    "capability", "layer", "model",
))  # fmt: skip


def _shared(name: str, phrase: str) -> int:
    theirs = _words(phrase)
    return sum(1 for w in _words(name) if any(_same(w, t) for t in theirs))


def name_match(name: str, phrase: str) -> float:
    """How well an element's name and a question's phrase agree: the lower of the share of the name's words
    in the phrase and the share of the phrase's words (other than kind words it does not share) in the name.
    A name whose every word is in the phrase scores at least 1 − 1/(its words + 1) (a longer name more),
    so a phrase with words around the name still finds it."""
    mine, theirs = _words(name), _words(phrase)
    theirs = [w for w in theirs if any(_same(w, m) for m in mine) or w not in _GENERIC]
    if not mine or not theirs:
        return 0.0
    covered = sum(1 for w in mine if any(_same(w, t) for t in theirs)) / len(mine)
    used = sum(1 for w in theirs if any(_same(w, m) for m in mine)) / len(theirs)
    whole = 1.0 - 1.0 / (len(mine) + 1) if covered == 1.0 else 0.0
    return max(min(covered, used), whole)


@dataclass(frozen=True)
class _Found:
    element_id: str
    via: MatchedVia
    order: tuple[int, int, int]  # (type not asked, depth, relation preference)
    model_path: str


@dataclass(frozen=True)
class RelationReading:
    """What ``RelationAnswers`` read in a query: a relationship question (``intent``), or none — then only
    hits on relationships' own records are answered with an element."""

    intent: RelationIntent | None

    @property
    def deepen(self) -> bool:
        return self.intent is not None


class RelationAnswers:
    """The re-scorer (``search.rescore.Rescorer``): ``wants`` reads the question; ``rescore`` answers a hit
    on a relationship's record with the element at its other end, and puts the elements a relationship
    question asks for first."""

    def wants(self, query: Query, filters: Filters, held: frozenset[str]) -> RelationReading | None:
        if filters.kinds and Kind.RECORD not in filters.kinds:
            return None
        return RelationReading(relation_intent(query.text))

    def rescore(self, scope: Scope, reading: RelationReading, result: SearchResult) -> SearchResult:
        """Neighbours are read as they were at the time the search read (``scope.point``)."""
        store, collection, point = scope.store, scope.collection, scope.point
        intent = reading.intent
        result = self._relationship_records(store, collection, result, intent, point)
        if intent is None:
            return result
        records = [
            h for h in result.hits if h.chunk.kind == Kind.RECORD and h.chunk.metadata.get("element_id")
        ]
        # the element named: its name agrees best with the phrase; among equals, the one using most of it
        # ("customer file service" names Customer File Service, not Customer File)
        scored = [(name_match(name := str(h.chunk.metadata.get("element_name") or h.chunk.title), intent.named),
                   _shared(name, intent.named), h) for h in records]  # fmt: skip
        if max((score for score, _, _ in scored), default=0.0) < 1.0:
            # not named exactly among the hits (the question's other words can pull the fused list elsewhere):
            # the records the phrase alone finds by its words
            seen = {h.chunk.chunk_id for h in records}
            for extra in _by_words(store, collection, intent.named, point):
                if extra.chunk.chunk_id not in seen:
                    name = str(extra.chunk.metadata.get("element_name") or extra.chunk.title)
                    scored.append((name_match(name, intent.named), _shared(name, intent.named), extra))
        if not scored:
            return result
        best = max((score, used) for score, used, _ in scored)
        if best[0] >= (MIN_NAME_MATCH if not intent.strict else STRICT_NAME_MATCH):
            named = [h for score, used, h in scored if (score, used) == best]
        elif not intent.strict and scored[0][1] > 0:
            # no name agrees ("started when someone asks for insurance"): the best record hit, if it shares a
            # word with the phrase (Request for Insurance), is taken as the element meant
            named = [scored[0][2]]
        else:
            return result
        found = self._walk(store, collection, intent, named, point)
        if not found:
            return result
        known = {
            str(h.chunk.metadata.get("element_id")): h for h in result.hits if h.chunk.kind == Kind.RECORD
        }
        answers: list[Hit] = []
        top = named[0]
        for item in sorted(found.values(), key=lambda f: f.order)[:MAX_ANSWERS]:
            hit = known.get(item.element_id) or self._hit_of(store, collection, item, point)
            if hit is None:
                continue
            answers.append(replace(hit, relevance=max(hit.relevance, top.relevance), matched_via=item.via))
        if not answers:
            return result
        taken = {a.chunk.chunk_id for a in answers}
        rest = [h for h in result.hits if h.chunk.chunk_id not in taken]
        ceiling = max([h.score for h in result.hits] or [0.0])
        ordered = [replace(a, score=ceiling + (len(answers) - i) * 1e-6) for i, a in enumerate(answers)]
        return replace(result, hits=tuple([*ordered, *rest]))

    @staticmethod
    def _relationship_records(
        store: Store, collection: str, result: SearchResult, intent: RelationIntent | None, point: str | None
    ) -> SearchResult:
        """Each hit on a relationship's record becomes the element at the end the query does not name (the
        one it asks for), in the hit's place, unless that element ranks above it already."""
        if not any(h.chunk.metadata.get("relationship_id") for h in result.hits):
            return result
        query = intent.named if intent is not None else result.query
        hits: list[Hit] = []
        seen: set[str] = set()
        for hit in result.hits:
            meta = hit.chunk.metadata
            if not meta.get("relationship_id"):
                element = str(meta.get("element_id") or "")
                if element and element in seen:
                    continue
                seen.add(element)
                hits.append(hit)
                continue
            kind = str(meta.get("relationship_type", "")).lower()
            source_name, target_name = str(meta.get("source_name", "")), str(meta.get("target_name", ""))
            # the end a relationship question asks for, else the end the query does not name
            asked = (
                {end for k, end in intent.ends if k == kind}
                if intent is not None and not intent.impact
                else set()
            )
            if len(asked) == 1:
                asks_source = "source" in asked
            else:
                asks_source = name_match(target_name, query) > name_match(source_name, query)
            end, other = ("source", "target") if asks_source else ("target", "source")
            element = str(meta.get(f"{end}_id", ""))
            if not element or element in seen:
                continue
            chunk = _chunk_of(store, collection, f"{hit.chunk.path.rsplit('#', 1)[0]}#{element}", point)
            if chunk is None:
                continue
            seen.add(element)
            via = MatchedVia(
                via="relationship record", relationship=kind, direction="in" if end == "source" else "out",
                from_element_id=str(meta.get(f"{other}_id", "")), from_element_name=str(meta.get(f"{other}_name", "")),
                path=f"{source_name} —{kind}→ {target_name}",
            )  # fmt: skip
            hits.append(Hit(chunk, hit.score, hit.relevance, hit.explain, hit.embedding_status, via))
        return replace(result, hits=tuple(hits))

    def _walk(
        self, store: Store, collection: str, intent: RelationIntent, named: Sequence[Hit], point: str | None
    ) -> dict[str, _Found]:
        """The elements at the asked ends, level by level (impact: to ``intent.depth``). Each relation in an
        element's metadata names the other element and its type, so only a level's frontier is read."""
        found: dict[str, _Found] = {}
        starts = {str(h.chunk.metadata["element_id"]) for h in named}
        frontier = [(h.chunk, str(h.chunk.metadata.get("element_name") or h.chunk.title)) for h in named]
        for level in range(1, intent.depth + 1):
            reached: list[tuple[str, str]] = []  # (element id, its path) to read for the next level
            for chunk, path in frontier:
                model_path = chunk.path.rsplit("#", 1)[0]
                for relation in _relations(chunk):
                    kind, other = str(relation.get("type", "")).lower(), str(relation.get("element_id", ""))
                    # the answer is the relationship's source when the known element is its target ("in")
                    end = "source" if relation.get("direction") == "in" else "target"
                    if (kind, end) not in intent.ends or not other or other in starts or other in found:
                        continue
                    name, element_type = relation.get("name"), relation.get("element_type")
                    if name is None or element_type is None:  # indexed before relations carried them
                        neighbour = _chunk_of(store, collection, f"{model_path}#{other}", point)
                        if neighbour is None:
                            continue
                        name = neighbour.metadata.get("element_name") or neighbour.title
                        element_type = neighbour.metadata.get("element_type", "")
                    asked = str(element_type).lower() in intent.asked_types
                    if intent.strict and not asked:
                        continue
                    arrow = f" —{kind}→ " if end == "target" else f" ←{kind}— "
                    via = MatchedVia(
                        via="relationship", relationship=kind, direction="out" if end == "target" else "in",
                        from_element_id=str(chunk.metadata.get("element_id", "")),
                        from_element_name=str(chunk.metadata.get("element_name") or chunk.title),
                        path=f"{path}{arrow}{name}", depth=level,
                    )  # fmt: skip
                    order = (
                        0 if asked or not intent.asked_types else 1,
                        level,
                        intent.ends.index((kind, end)),
                    )
                    found[other] = _Found(other, via, order, model_path)
                    reached.append((other, via.path))
            if not intent.impact or level == intent.depth:
                break
            frontier = []
            for other, path in reached[:MAX_FRONTIER]:
                read = _chunk_of(store, collection, f"{found[other].model_path}#{other}", point)
                if read is not None:
                    frontier.append((read, path))
        return found

    @staticmethod
    def _hit_of(store: Store, collection: str, item: _Found, point: str | None) -> Hit | None:
        chunk = _chunk_of(store, collection, f"{item.model_path}#{item.element_id}", point)
        return None if chunk is None else Hit(chunk, 0.0, 0.0)


NAME_LOOKUP_DEPTH = 50  # relationship records that mention the name take places too


def _by_words(store: Store, collection: str, phrase: str, point: str | None) -> list[Hit]:
    """Element records the phrase finds by its words alone (the keyword arm, unfiltered: its fast path;
    other kinds are left out after), best first."""
    found = store.keyword_search(collection, phrase, Filters(as_of=point), NAME_LOOKUP_DEPTH)
    chunks = store.get_chunks([h.chunk_id for h in found])
    return [
        Hit(chunks[h.chunk_id], 0.0, 0.0)
        for h in found
        if h.chunk_id in chunks and chunks[h.chunk_id].metadata.get("element_id")
    ]


def _relations(chunk: Chunk) -> Iterable[dict[str, object]]:
    relations = chunk.metadata.get("relations")
    return [r for r in relations if isinstance(r, dict)] if isinstance(relations, list) else []


def _chunk_of(store: Store, collection: str, source: str, point: str | None) -> Chunk | None:
    """An element's record chunk: its current one, or the one valid at ``point``."""
    state = store.document_state(collection, source)
    if state is None:
        return None
    try:
        if point:
            revision_id = store.revision_at(state.document_id, point)
            if revision_id is None:
                return None
            chunk_ids = store.chunk_ids_of_revision(revision_id)
        else:
            chunk_ids = store.current_chunk_ids(state.document_id)
    except DocumentNotFound:
        return None
    chunks = store.get_chunks(chunk_ids[:1])
    return next(iter(chunks.values()), None)
