"""The deployment files (deploy/): Compose and Kubernetes manifests validated without Docker or a cluster.

`docker compose config` and `kubectl --dry-run` are not available here: each file is parsed and held to a
schema of the keys it may use (a subset of the Compose specification and of the Kubernetes API), and to the
references between files (secrets, ports, labels, mounted files) that a typo would break.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"

_SERVICE_KEYS = (
    "image",
    "build",
    "command",
    "entrypoint",
    "environment",
    "volumes",
    "depends_on",
    "healthcheck",
    "restart",
    "ports",
)
_SERVICE = {
    "type": "object",
    "additionalProperties": False,
    "properties": {key: {} for key in _SERVICE_KEYS},
    "anyOf": [{"required": ["image"]}, {"required": ["build"]}],
}
COMPOSE_SCHEMA = {
    "type": "object",
    "required": ["services"],
    "additionalProperties": False,
    "patternProperties": {"^x-": {}},
    "properties": {
        "name": {"type": "string"},
        "services": {"type": "object", "additionalProperties": _SERVICE},
        "volumes": {"type": "object"},
    },
}
K8S_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind"],
    "properties": {
        "apiVersion": {"enum": ["v1", "apps/v1", "kustomize.config.k8s.io/v1beta1"]},
        "kind": {"enum": ["Deployment", "Service", "Secret", "Kustomization"]},
        "metadata": {"type": "object", "required": ["name"]},
    },
    "if": {"properties": {"kind": {"const": "Kustomization"}}},
    "then": {"required": ["resources"]},
    "else": {"required": ["metadata"]},
}


def test_compose_holds_a_primary_a_replica_two_servers_and_a_proxy() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    jsonschema.validate(compose, COMPOSE_SCHEMA)
    services = compose["services"]
    assert set(services) == {"primary", "replica", "retrievo-1", "retrievo-2", "proxy"}
    for name in ("retrievo-1", "retrievo-2"):
        server = services[name]
        assert (DEPLOY.parent / server["build"]["dockerfile"]).exists() and server["command"] == ["serve"]
        environment = server["environment"]
        assert "@primary:5432/" in environment["RETRIEVO_STORE"]
        assert "@replica:5432/" in environment["RETRIEVO_READ_STORE"], "reads go to the replica"
        assert "/readyz" in " ".join(server["healthcheck"]["test"])
        assert server["depends_on"]["primary"]["condition"] == "service_healthy"
    assert "wal_level=replica" in services["primary"]["command"]
    for service in services.values():  # every file it mounts is in deploy/
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./") and source != "./data":
                assert (DEPLOY / source).exists(), source
    text = (DEPLOY / "compose.yaml").read_text()
    assert "CHANGE-ME" not in text and not re.search(r"postgresql://\w+:[^$@]+@", text), "no password in it"
    replica = (DEPLOY / "postgres" / "replica-entrypoint.sh").read_text()
    assert "pg_basebackup" in replica and " -R " in replica
    upstream = (DEPLOY / "nginx.conf").read_text()
    assert "server retrievo-1:8765" in upstream and "server retrievo-2:8765" in upstream
    assert services["proxy"]["depends_on"]["retrievo-1"]["condition"] == "service_healthy"


def _manifests() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            jsonschema.validate(document, K8S_SCHEMA)
            found[document["kind"]] = document
    return found


def test_kubernetes_manifests_fit_together() -> None:
    manifests = _manifests()
    assert set(manifests) == {"Deployment", "Service", "Secret", "Kustomization"}
    kustomized = manifests["Kustomization"]["resources"]
    assert all((DEPLOY / "k8s" / name).exists() for name in kustomized) and len(kustomized) == 3
    deployment, service, secret = manifests["Deployment"], manifests["Service"], manifests["Secret"]
    spec = deployment["spec"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items() and spec["replicas"] >= 2
    assert service["spec"]["selector"].items() <= labels.items(), "the Service finds the pods"
    (container,) = spec["template"]["spec"]["containers"]
    ports = {p["name"] for p in container["ports"]}
    assert service["spec"]["ports"][0]["targetPort"] in ports
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    environment = {e["name"]: e for e in container["env"]}
    for name in ("RETRIEVO_STORE", "RETRIEVO_READ_STORE"):  # from the Secret, by a key it has
        reference = environment[name]["valueFrom"]["secretKeyRef"]
        assert reference["name"] == secret["metadata"]["name"] and reference["key"] in secret["stringData"]
    assert all("postgresql://" not in str(e.get("value", "")) for e in container["env"])
