"""`retrievo serve` for real (uvicorn in a subprocess): keys, tenants, REST twins, MCP over HTTP, limits."""

from __future__ import annotations

import json
import shutil
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from retrievo import Config, Engine
from retrievo.errors import ConfigError
from serving import Server, cli, create_key, serving

QUESTION = "How many weeks of parental leave?"


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> dict[str, Any]:
    """Two tenants' collections in one index, and keys of every kind."""
    from conftest import HANDBOOK

    base = tmp_path_factory.mktemp("serve")
    hr, it = base / "hr", base / "it"
    hr.mkdir(), it.mkdir()
    for name in ("leave-policy.md", "expenses.md", "onboarding.html"):
        shutil.copy(HANDBOOK / name, hr / name)
    for name in ("security.md", "remote-work.txt"):
        shutil.copy(HANDBOOK / name, it / name)
    db = base / "team.db"
    with Engine(Config(db=db, collection="hr"), embedder=minilm) as engine:
        engine.index([hr])
        engine.index([it], collection="it")
    where = ["--db", str(db)]
    return {
        "where": where, "db": db, "hr_dir": hr,
        "all": create_key(where, "everyone"),
        "hr": create_key(where, "hr-bot", "read", "hr"),
        "it": create_key(where, "it-bot", "read", "it"),
        "writer": create_key(where, "hr-writer", "write", "hr"),
        "admin": create_key(where, "root", "admin"),
    }  # fmt: skip


@pytest.fixture(scope="module")
def server(team: dict[str, Any]) -> Iterator[Server]:
    with serving(team["where"], "--tools", "all") as running:
        yield running


def post(server: Server, path: str, body: Any, key: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.post(f"{server.url}{path}", json=body, headers=headers, timeout=60)


def mcp_call(server: Server, key: str | None, name: str, arguments: dict[str, Any]) -> tuple[list[str], Any]:
    """Tool names the key sees, and the structured answer of one call, through the official client."""

    async def main() -> tuple[list[str], Any]:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
            ):
                tools = sorted(tool.name for tool in (await client.list_tools()).tools)
                result = await client.call_tool(name, arguments)
                return tools, (result.structured_content if not result.is_error else result.content)

    return anyio.run(main)


def test_no_key_or_a_wrong_key_gets_the_same_401(server: Server, team: dict[str, Any]) -> None:
    real = team["all"]
    forged = real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB")
    answers = [
        post(server, "/api/search", {"query": QUESTION}, key) for key in (None, "nonsense", "rtv_0.x", forged)
    ]
    assert {a.status_code for a in answers} == {401}
    assert len({a.text for a in answers}) == 1  # nothing tells a wrong key from a missing one
    assert answers[0].headers["www-authenticate"] == "Bearer"
    assert httpx.get(f"{server.url}/api/status", timeout=30).status_code == 401
    assert httpx.post(f"{server.url}/mcp", json={}, timeout=30).status_code == 401


def test_rest_search_is_the_mcp_search(server: Server, team: dict[str, Any]) -> None:
    arguments = {"query": QUESTION, "limit": 3, "filters": {"collection": "hr"}}
    rest = post(server, "/api/search", arguments, team["all"])
    assert rest.status_code == 200, rest.text
    assert rest.headers["content-type"] == "application/json"
    data = rest.json()
    assert data["results"][0]["path"].endswith("leave-policy.md")
    _, over_mcp = mcp_call(server, team["all"], "search", arguments)
    for answer in (data, over_mcp):
        answer.pop("search_duration_ms")
    assert data == over_mcp


def test_a_key_sees_only_its_collections(server: Server, team: dict[str, Any]) -> None:
    hr = team["hr"]
    # Its own collection is its default; another one is refused without saying whether it exists.
    own = post(server, "/api/search", {"query": QUESTION}, hr)
    assert own.status_code == 200 and {r["collection"] for r in own.json()["results"]} == {"hr"}
    assert not any(Path(r["path"]).is_absolute() for r in own.json()["results"]), "no server path to a key"
    assert str(team["hr_dir"]) not in own.text
    for collection in ("it", "no-such-collection"):
        refused = post(
            server, "/api/search", {"query": "password", "filters": {"collection": collection}}, hr
        )
        assert refused.status_code == 403, refused.text
        assert "it" not in refused.json()["error"].replace(f"'{collection}'", "").split()
    status = httpx.get(
        f"{server.url}/api/status", headers={"Authorization": f"Bearer {hr}"}, timeout=30
    ).json()
    assert [c["name"] for c in status["collections"]] == ["hr"]
    assert str(team["db"]) not in json.dumps(status) and status["db"] == "(not shown to remote callers)"
    # A document of the other tenant reads as missing, exactly like a made-up id.
    it_hit = post(server, "/api/search", {"query": "password"}, team["it"]).json()["results"][0]
    it_hit["document_id"] = it_hit["uri"].split("/")[3]
    outside = post(server, "/api/get_document", {"document_id": it_hit["document_id"]}, hr)
    made_up = post(server, "/api/get_document", {"document_id": "doc_0000000000000000"}, hr)
    assert outside.status_code == made_up.status_code == 404
    assert outside.json()["error"].replace(it_hit["document_id"], "X") == made_up.json()["error"].replace(
        "doc_0000000000000000", "X"
    )
    similar = post(server, "/api/find_similar", {"document_id": it_hit["document_id"]}, hr)
    assert similar.status_code == 404
    # The same boundaries over MCP, through the official client.
    tools, answer = mcp_call(server, hr, "index_status", {})
    assert [c["name"] for c in answer["collections"]] == ["hr"]
    assert "refresh_index" not in tools and "regenerate_embeddings" not in tools and "search" in tools
    _, refused_mcp = mcp_call(server, hr, "search", {"query": "password", "filters": {"collection": "it"}})
    assert "not served here" in refused_mcp[0].text
    _, doc = mcp_call(server, hr, "get_document", {"document_id": it_hit["document_id"]})
    assert "not" in doc[0].text and "password" not in doc[0].text.lower()


def test_mcp_without_a_key_is_refused(server: Server) -> None:
    with pytest.raises(BaseException, match="unhandled errors"):  # the client's error for a 401 reply
        mcp_call(server, None, "search", {"query": QUESTION})
    refused = [line for line in server.logs().splitlines() if '"/mcp"' in line and '"status": 401' in line]
    assert refused, "the server did not answer the keyless MCP client with 401"


def test_write_rights_and_key_management(server: Server, team: dict[str, Any]) -> None:
    refresh = {"path": str(team["hr_dir"])}
    assert post(server, "/api/refresh_index", refresh, team["hr"]).status_code == 403
    done = post(server, "/api/refresh_index", refresh, team["writer"])
    assert done.status_code == 200, done.text
    assert done.json()["documents_unchanged"] == 3
    # A writer confined to hr cannot refresh into another collection.
    assert (
        post(server, "/api/refresh_index", {**refresh, "collection": "it"}, team["writer"]).status_code == 403
    )
    # Keys over REST: admin only; the secret appears once, in `key`.
    assert post(server, "/api/keys", {"name": "x"}, team["writer"]).status_code == 403
    made = post(server, "/api/keys", {"name": "temp", "scope": "read", "collections": ["it"]}, team["admin"])
    assert made.status_code == 201, made.text
    token = made.json()["key"]
    assert post(server, "/api/search", {"query": "password"}, token).status_code == 200
    listed = httpx.get(
        f"{server.url}/api/keys", headers={"Authorization": f"Bearer {team['admin']}"}, timeout=30
    )
    assert "temp" in listed.text and token not in listed.text and "hash" not in listed.text
    revoked = httpx.delete(
        f"{server.url}/api/keys/temp", headers={"Authorization": f"Bearer {team['admin']}"}, timeout=30
    )
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    assert post(server, "/api/search", {"query": "password"}, token).status_code == 401


def test_a_key_revoked_from_the_cli_is_refused_by_the_running_server(
    server: Server, team: dict[str, Any]
) -> None:
    token = create_key(team["where"], "short-lived")
    assert post(server, "/api/index_status", {}, token).status_code == 200
    done = cli("keys", "revoke", "short-lived", *team["where"])
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 10
    while post(server, "/api/index_status", {}, token).status_code == 200:
        assert time.monotonic() < deadline, "the revoked key still worked after 10 s"
        time.sleep(0.5)
    assert post(server, "/api/index_status", {}, token).status_code == 401


def test_errors_are_json_with_a_status_that_means_something(server: Server, team: dict[str, Any]) -> None:
    key = team["all"]
    bad = post(server, "/api/search", {"query": QUESTION, "limit": 0}, key)
    assert bad.status_code == 400 and "limit" in bad.json()["error"]
    unknown = post(server, "/api/search", {"query": QUESTION, "limti": 3}, key)
    assert unknown.status_code == 400 and "unknown argument 'limti'" in unknown.json()["error"]
    raw = httpx.post(
        f"{server.url}/api/search",
        content=b"{not json",
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert raw.status_code == 400 and "JSON" in raw.json()["error"]
    assert post(server, "/api/no_such_tool", {}, key).status_code in (404, 405)


def test_rest_bodies_too_deep_or_too_large_are_refused_and_the_connection_goes_on(
    server: Server, team: dict[str, Any]
) -> None:
    """As /mcp answers: 400 for arguments nested past 32 levels (3,000 brackets once answered 500 and reset
    the next request on the connection), 413 past the body limit (1 MB; 60 MB were read and parsed whole)."""
    headers = {"Authorization": f"Bearer {team['all']}", "Content-Type": "application/json"}
    ordinary = {"query": QUESTION, "filters": {"collection": "hr"}}
    deep = b'{"query": "leave", "filters": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    nested = b'{"query": "leave", "filters": {"tags": ' + b"[" * 40 + b"]" * 40 + b"}}"
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:  # one connection
        for body in (deep, nested):
            refused = client.post("/api/search", content=body)
            assert refused.status_code == 400 and "nests deeper than 32 levels" in refused.json()["error"]
            assert client.post("/api/search", json=ordinary).status_code == 200
        huge = client.post("/api/search", content=b'{"query": "' + b"a" * 2_000_000 + b'"}')
        assert huge.status_code == 413 and "limit of 1,000,000 bytes" in huge.json()["error"]
        assert client.post("/api/search", json=ordinary).status_code == 200


def test_openapi_is_generated_from_the_tools(server: Server) -> None:
    schema = httpx.get(f"{server.url}/api/openapi.json", timeout=30).json()
    for tool in ("search", "get_context", "get_document", "find_similar", "index_status", "refresh_index"):
        assert f"/api/{tool}" in schema["paths"]
    body = schema["paths"]["/api/search"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert "query" in body["properties"] and body["required"] == ["query"]
    text = json.dumps(schema)
    assert "#/$defs/" not in text
    for ref in {part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]}:
        assert ref in schema["components"]["schemas"], ref
    assert httpx.get(f"{server.url}/api/docs", timeout=30).status_code == 200


def test_health_readiness_and_logs_without_secrets(server: Server, team: dict[str, Any]) -> None:
    assert httpx.get(f"{server.url}/healthz", timeout=30).json() == {"status": "ok"}
    assert httpx.get(f"{server.url}/readyz", timeout=30).json() == {"status": "ready"}
    secret_query = "zebra-unique-question-text"
    post(server, "/api/search", {"query": secret_query}, team["all"])
    logs = server.logs()
    lines = [json.loads(line.split(": ", 1)[1]) for line in logs.splitlines() if '"event": "request"' in line]
    assert any(line["key"] == "everyone" and line["path"] == "/api/search" for line in lines)
    for secret in (team["all"], team["hr"], team["admin"], secret_query):
        assert secret not in logs


def test_cors_is_off_unless_origins_are_named(server: Server, team: dict[str, Any]) -> None:
    preflight = {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    answer = httpx.options(f"{server.url}/api/search", headers=preflight, timeout=30)
    assert "access-control-allow-origin" not in answer.headers
    with serving(team["where"], "--cors-origin", "https://intranet.example") as other:
        allowed = {
            **preflight,
            "Origin": "https://intranet.example",
            "Access-Control-Request-Headers": "authorization",
        }
        answer = httpx.options(f"{other.url}/api/search", headers=allowed, timeout=30)
        assert answer.headers["access-control-allow-origin"] == "https://intranet.example"
        evil = httpx.options(f"{other.url}/api/search", headers=preflight, timeout=30)
        assert "access-control-allow-origin" not in evil.headers


def test_rate_limit_answers_429_with_retry_after(team: dict[str, Any]) -> None:
    with serving(team["where"], "--rate", "0.2", "--burst", "2") as limited:
        answers = [post(limited, "/api/index_status", {}, team["all"]) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 429]
        assert int(answers[2].headers["retry-after"]) >= 1
        # Another key has its own bucket.
        assert post(limited, "/api/index_status", {}, team["hr"]).status_code == 200


def test_no_auth_only_on_loopback(team: dict[str, Any]) -> None:
    refused = cli("serve", "--no-auth", "--host", "0.0.0.0", *team["where"])
    assert refused.returncode == 1 and "loopback" in refused.stderr.replace("\n", " ")
    with serving(team["where"], "--no-auth") as open_server:
        answer = post(open_server, "/api/search", {"query": QUESTION, "filters": {"collection": "hr"}}, None)
        assert answer.status_code == 200, answer.text


def test_settings_file_environment_and_flags(tmp_path: Path) -> None:
    from retrievo.surfaces.http import settings

    path = tmp_path / "retrievo.toml"
    path.write_text(
        '[serve]\nport = 9000\nrate = 5\ncors_origins = ["https://a.example"]\nstore = "postgresql://x"\n'
    )
    assert tomllib.loads(path.read_text())["serve"]["port"] == 9000
    loaded = settings.load(path, {"rate": None}, {"RETRIEVO_SERVE_PORT": "9100"})
    assert (loaded.port, loaded.rate, loaded.cors_origins) == (9100, 5.0, ("https://a.example",))
    assert loaded.extra == {"store": "postgresql://x"}
    assert settings.load(path, {"port": 9200}, {"RETRIEVO_SERVE_PORT": "9100"}).port == 9200
    path.write_text("[serve]\nprot = 1\n")
    with pytest.raises(ConfigError, match="unknown serve settings"):
        settings.load(path, {}, {})
    with pytest.raises(ConfigError, match="cannot read"):
        settings.load(None, {}, {"RETRIEVO_SERVE_PORT": "eighty"})


def test_keys_on_both_stores(make_engine: Any) -> None:
    """The key table's contract, on SQLite and PostgreSQL."""
    from retrievo.surfaces.access import KeyRing

    engine = make_engine()
    engine.index([Path(__file__).resolve().parent.parent / "examples" / "handbook" / "expenses.md"])
    ring = KeyRing(lambda: engine._open_store(create=True))
    key, token = ring.create("ci", "write", ("b", "a", "a"))
    assert key.collections == ("a", "b") and key.scope == "write"
    assert ring.remembered(token) is None, "a key not yet checked is not taken on trust"
    principal = ring.authenticate(token)
    assert ring.remembered(token) == principal  # the server's event-loop fast path
    assert ring.remembered(token + "x") is None and ring.remembered("not-a-key") is None
    assert principal.name == "ci" and principal.collections == frozenset({"a", "b"}) and principal.may("read")
    assert not principal.may("admin")
    with pytest.raises(ConfigError, match="already named"):
        ring.create("ci")
    with pytest.raises(ConfigError, match="scope"):
        ring.create("other", "root")
    assert [k.name for k in ring.list()] == ["ci"]
    stored = engine._open_store(create=False).key_secret(key.key_id)
    assert stored is not None and token not in stored[1] and stored[1].startswith("$argon2id$")
    ring.revoke("ci")
    from retrievo.errors import AccessDenied

    with pytest.raises(AccessDenied):
        ring.authenticate(token)
    assert ring.remembered(token) is None
    assert ring.list() == [] and ring.list(include_revoked=True)[0].revoked_at
    again, _ = ring.create("ci")  # a revoked key's name can be used again
    assert again.key_id != key.key_id


def test_a_team_server_on_postgresql(postgres_url: str, minilm: Any, tmp_path: Path) -> None:
    """The documented team set-up: index, keys and server all on one PostgreSQL database."""
    from conftest import HANDBOOK

    with Engine(Config.from_env(store=postgres_url, collection="hr"), embedder=minilm) as engine:
        engine.index([HANDBOOK])
    where = ["--store", postgres_url]
    key = create_key(where, "pg-reader", "read", "hr")
    with serving(where, "--tools", "all") as pg:
        answer = post(pg, "/api/search", {"query": QUESTION, "limit": 3}, key)
        assert answer.status_code == 200, answer.text
        assert answer.json()["results"][0]["path"].endswith("leave-policy.md")
        tools, status = mcp_call(pg, key, "index_status", {})
        assert [c["name"] for c in status["collections"]] == ["hr"] and "refresh_index" not in tools
        assert post(pg, "/api/search", {"query": QUESTION}, None).status_code == 401
        assert (
            postgres_url.split("@", maxsplit=1)[0] not in pg.logs()
        )  # the URL's credentials never reach a log


def test_sigterm_finishes_and_exits_cleanly(team: dict[str, Any]) -> None:
    with serving(team["where"]) as running:
        assert post(running, "/api/index_status", {}, team["all"]).status_code == 200
        running.process.terminate()
        # uvicorn finishes the requests in flight, runs the app's shutdown, then re-raises SIGTERM.
        assert running.process.wait(timeout=20) in (0, -15)
        assert '"event": "stopped"' in running.logs() and "Traceback" not in running.logs()


def test_mcp_resources_over_http_stay_inside_the_keys_collections(
    server: Server, team: dict[str, Any]
) -> None:
    it_hit = post(server, "/api/search", {"query": "password"}, team["it"]).json()["results"][0]
    it_hit["document_id"] = it_hit["uri"].split("/")[3]
    hr_hit = post(server, "/api/search", {"query": QUESTION}, team["hr"]).json()["results"][0]

    async def main() -> tuple[str, str]:
        headers = {"Authorization": f"Bearer {team['hr']}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
        ):
            own = await client.read_resource(hr_hit["uri"])
            try:
                await client.read_resource(it_hit["uri"])
            except Exception as exc:  # the SDK raises the server's resource error
                return own.contents[0].text, str(exc)  # type: ignore[union-attr]
            return own.contents[0].text, "read"

    own, other = anyio.run(main)
    assert "Parental leave" in own
    assert other != "read" and "password" not in other.lower()


def test_several_workers_answer_rest_and_mcp_alike(team: dict[str, Any]) -> None:
    """``--workers 2`` (the deploy config's): each worker builds its app from the environment and loads
    the model before taking requests; keys, scopes and answers are those of a single process."""
    arguments = {"query": QUESTION, "limit": 3, "filters": {"collection": "hr"}}
    with serving(team["where"]) as single:
        expected = post(single, "/api/search", arguments, team["all"]).json()
    with serving(team["where"], "--workers", "2") as running:
        for _ in range(6):  # connections spread over the workers
            answer = post(running, "/api/search", arguments, team["all"])
            assert answer.status_code == 200, answer.text
            assert [(h["uri"], h["line_start"]) for h in answer.json()["results"]] == [
                (h["uri"], h["line_start"]) for h in expected["results"]
            ]
        assert post(running, "/api/search", arguments, team["it"]).status_code == 403
        tools, over_mcp = mcp_call(running, team["hr"], "search", {"query": QUESTION, "limit": 3})
        assert "search" in tools and over_mcp["results"][0]["path"].endswith("leave-policy.md")
        assert "2 worker(s)" in running.logs() and "Traceback" not in running.logs()


def test_status_is_served_under_the_default_tools_and_names_no_server_path(team: dict[str, Any]) -> None:
    """`GET /api/status` is documented whatever `--tools` offers over MCP (before: 400 "Unknown tool:
    index_status" under the default `auto`); neither it nor MCP's index_status tells a key where the index is."""
    with serving(team["where"]) as default_tools:
        answer = httpx.get(
            f"{default_tools.url}/api/status", headers={"Authorization": f"Bearer {team['hr']}"}, timeout=30
        )
        assert answer.status_code == 200, answer.text
        assert [c["name"] for c in answer.json()["collections"]] == ["hr"]
        assert str(team["db"]) not in answer.text and str(team["db"].parent) not in answer.text
        tools, found = mcp_call(default_tools, team["hr"], "search", {"query": QUESTION})
        assert found["results"], "the MCP side answers under the same server"
        assert "index_status" not in tools, "auto leaves the admin toolset out of MCP"
        rest = post(default_tools, "/api/index_status", {}, team["admin"])
        assert rest.status_code == 200 and str(team["db"]) not in rest.text


def test_a_key_can_expire_and_is_refused_from_then_on_like_a_revoked_one(
    server: Server, team: dict[str, Any]
) -> None:
    from retrievo.models import ApiKey
    from retrievo.surfaces.access import _HASHER

    made = cli("keys", "create", "--name", "contractor", "--expires", "30d", "--json", *team["where"])
    assert made.returncode == 0, made.stderr
    key = json.loads(made.stdout)
    assert key["expires_at"] > key["created_at"] and key["expires_at"].startswith("20")
    status = httpx.get(
        f"{server.url}/api/status", headers={"Authorization": f"Bearer {key['key']}"}, timeout=30
    )
    assert status.status_code == 200
    listed = cli("keys", "list", *team["where"]).stdout
    assert "contractor" in listed and key["expires_at"][:10] in listed
    # A key whose time has passed, as the store keeps it: the same 401 as a wrong or revoked key.
    with Engine(Config(db=team["db"], embedder="none")) as engine:
        token = "rtv_0ddba11c0ffe.expired-secret"
        past = ApiKey(
            "0ddba11c0ffe", "last-year", "read", (), "2025-01-01T00:00:00Z", None, "2025-02-01T00:00:00Z"
        )
        engine.open_store().save_key(past, _HASHER.hash(token))
    refused = httpx.get(f"{server.url}/api/status", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert refused.status_code == 401
    for wrong in ("yesterday", "2020-01-01"):
        bad = cli("keys", "create", "--name", "never", "--expires", wrong, *team["where"])
        assert bad.returncode == 1 and "--expires" in bad.stderr and "Traceback" not in bad.stderr
    api = post(server, "/api/keys", {"name": "api-made", "expires": "12h"}, team["admin"])
    assert api.status_code == 201 and api.json()["expires_at"]


def test_failed_logins_are_throttled_per_key_id_and_per_client(team: dict[str, Any]) -> None:
    """Each wrong secret costs an argon2 hash: after ten failures for one key id (or from one client) the
    server answers 429 with Retry-After before hashing; a token it accepted before is never held up."""
    with serving(team["where"]) as fresh:

        def status(token: str) -> httpx.Response:
            return httpx.get(
                f"{fresh.url}/api/status", headers={"Authorization": f"Bearer {token}"}, timeout=30
            )

        assert status(team["hr"]).status_code == 200
        key_id = team["hr"].split(".", 1)[0]
        codes = [status(f"{key_id}.wrong-secret-{n}").status_code for n in range(14)]
        assert codes[:10] == [401] * 10 and set(codes[10:]) == {429}, codes
        throttled = status(f"{key_id}.wrong-again")
        assert throttled.status_code == 429 and int(throttled.headers["Retry-After"]) >= 1
        assert "failed logins" in throttled.json()["error"]
        assert status(team["hr"]).status_code == 200, "its owner, accepted before, is not locked out"
        other_key = status("rtv_0123456789ab.made-up")  # another id, the same client: held up too
        assert other_key.status_code == 429
