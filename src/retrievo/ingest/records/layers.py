"""ArchiMate 3.1 element types → layer, and relationship types → the sentences chunks are made of.

Layers per the ArchiMate 3.1 specification (The Open Group, C197): strategy, business, application,
technology, physical, motivation, implementation & migration, other (composite elements, connectors).
ArchiMate 2.1 names (Infrastructure…, UsedBy, Network, CommunicationPath) map to their 3.x successors.
"""

from __future__ import annotations

LAYERS: dict[str, tuple[str, ...]] = {
    "strategy": ("Resource", "Capability", "ValueStream", "CourseOfAction"),
    "business": (
        "BusinessActor", "BusinessRole", "BusinessCollaboration", "BusinessInterface", "BusinessProcess",
        "BusinessFunction", "BusinessInteraction", "BusinessEvent", "BusinessService", "BusinessObject",
        "Contract", "Representation", "Product",
    ),
    "application": (
        "ApplicationComponent", "ApplicationCollaboration", "ApplicationInterface", "ApplicationFunction",
        "ApplicationInteraction", "ApplicationProcess", "ApplicationEvent", "ApplicationService", "DataObject",
    ),
    "technology": (
        "Node", "Device", "SystemSoftware", "TechnologyCollaboration", "TechnologyInterface", "Path",
        "CommunicationNetwork", "TechnologyFunction", "TechnologyProcess", "TechnologyInteraction",
        "TechnologyEvent", "TechnologyService", "Artifact", "InfrastructureInterface", "InfrastructureFunction",
        "InfrastructureService", "Network", "CommunicationPath",
    ),
    "physical": ("Equipment", "Facility", "DistributionNetwork", "Material"),
    "motivation": (
        "Stakeholder", "Driver", "Assessment", "Goal", "Outcome", "Principle", "Requirement", "Constraint",
        "Meaning", "Value",
    ),
    "implementation_migration": ("WorkPackage", "Deliverable", "ImplementationEvent", "Plateau", "Gap"),
    "other": ("Location", "Grouping", "Junction", "AndJunction", "OrJunction"),
}  # fmt: skip
LAYER_OF: dict[str, str] = {t.lower(): layer for layer, types in LAYERS.items() for t in types}
LAYER_NAMES = {
    "strategy": "Strategy", "business": "Business", "application": "Application", "technology": "Technology",
    "physical": "Physical", "motivation": "Motivation", "implementation_migration": "Implementation & Migration",
    "other": "Other",
}  # fmt: skip

# Relationship type → (outgoing verb phrase, incoming passive form), seed 000 §3.3.
VERBS: dict[str, tuple[str, str]] = {
    "realization": ("realizes", "is realized by"),
    "serving": ("serves", "is served by"),
    "usedby": ("serves", "is served by"),
    "assignment": ("is assigned to", "has assigned"),
    "composition": ("is composed of", "is part of"),
    "aggregation": ("aggregates", "is aggregated by"),
    "flow": ("flows to", "receives a flow from"),
    "triggering": ("triggers", "is triggered by"),
    "access": ("accesses", "is accessed by"),
    "association": ("is associated with", "is associated with"),
    "influence": ("influences", "is influenced by"),
    "specialization": ("specializes", "is specialized by"),
    "specialisation": ("specializes", "is specialized by"),
}
# Relationships through which an element belongs to a capability (undirected, within CAPABILITY_HOPS).
CAPABILITY_RELATIONS = frozenset({"realization", "composition", "aggregation", "assignment"})
CAPABILITY_HOPS = 2


def normalise_type(raw: str) -> str:
    """``archimate:BusinessProcess`` / ``BusinessProcessRelationship`` → ``BusinessProcess`` / ``...``."""
    name = raw.rsplit(":", maxsplit=1)[-1]
    return name[: -len("Relationship")] if name.endswith("Relationship") and len(name) > 12 else name


def layer_of(element_type: str) -> str:
    return LAYER_OF.get(element_type.lower(), "other")


def verbs_of(relationship_type: str) -> tuple[str, str]:
    return VERBS.get(
        relationship_type.lower(),
        (f"is related ({relationship_type}) to", f"is related ({relationship_type}) from"),
    )
