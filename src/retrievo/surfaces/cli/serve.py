"""The servers: `retrievo mcp` (an MCP server over stdio or HTTP), `retrievo serve` (REST + MCP over HTTP + the
search page, behind API keys) and `retrievo keys`."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from pathlib import Path

import click
from rich.table import Table

from retrievo.surfaces.access import SCOPES, KeyRing
from retrievo.surfaces.cli.app import main
from retrievo.surfaces.cli.base import _engine, _errors, db_option, err, json_option, out

KEEP_ALIVE_S = 75


@main.command()
@db_option
@click.option(
    "--collection", "collections", multiple=True, help="Serve only this collection (repeatable; default all)."
)
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="TOML file with a [serve] table (host, port, workers, cors_origins, rate, burst, store, …).")  # fmt: skip
@click.option("--host", help="Bind address (default 127.0.0.1; $RETRIEVO_SERVE_HOST).")
@click.option("--port", type=click.IntRange(1, 65535), help="Port (default 8765; $RETRIEVO_SERVE_PORT).")
@click.option("--workers", type=click.IntRange(1, 64), help="Worker processes (default 1).")
@click.option("--no-auth", is_flag=True, default=None, help="No API keys: refused unless bound to loopback.")
@click.option("--cors-origin", "cors_origins", multiple=True, help="Allow this browser origin (repeatable).")
@click.option("--rate", type=float, help="Requests a second per key, on average (default 50).")
@click.option("--burst", type=float, help="Requests a key may make at once (default 100).")
@click.option("--no-refresh", is_flag=True, default=None, help="No re-indexing or baselines over HTTP.")
@click.option(
    "--log-queries", is_flag=True, default=None, help="Put query text in request logs (off by default)."
)
@click.option(
    "--read-store",
    "read_stores",
    multiple=True,
    help="postgresql://… streaming replica of --store: searches and reads go there (repeatable).",
)
@click.option("--max-replica-lag", type=float, help="Seconds a replica may lag before it is skipped (10).")
@click.option(
    "--tools",
    "toolsets",
    help="MCP toolsets, comma-separated: docs, library, similar, code, records, registry, admin; auto (default: "
    "all but similar and admin, each once its kind is indexed) or all. REST has every tool.",
)
def serve(
    db: Path | None,
    store: str | None,
    collections: tuple[str, ...],
    config_file: Path | None,
    host: str | None,
    port: int | None,
    workers: int | None,
    no_auth: bool | None,
    cors_origins: tuple[str, ...],
    rate: float | None,
    burst: float | None,
    no_refresh: bool | None,
    log_queries: bool | None,
    read_stores: tuple[str, ...],
    max_replica_lag: float | None,
    toolsets: str | None,
) -> None:
    """Serve the index over HTTP for a team: REST at /api (OpenAPI at /api/docs), MCP at /mcp, a search
    page at /. Every request needs `Authorization: Bearer KEY` (see `retrievo keys create`)."""
    import uvicorn

    from retrievo.surfaces.http import build_app, configure_logging, load_settings

    overrides = {
        "host": host, "port": port, "workers": workers, "no_auth": no_auth, "rate": rate, "burst": burst,
        "collections": collections or None, "cors_origins": cors_origins or None, "log_queries": log_queries,
        "allow_refresh": False if no_refresh else None, "tools": toolsets,
    }  # fmt: skip
    with _errors():
        settings = load_settings(config_file, overrides)
        db = db or (Path(settings.extra["db"]) if "db" in settings.extra else None)
        store = store or settings.extra.get("store")
        read_stores = read_stores or tuple(settings.extra.get("read_store", ()))
        max_replica_lag = max_replica_lag or settings.extra.get("max_replica_lag")
        engine = _engine(
            db, settings.collections[0] if settings.collections else None, store=store,
            read_stores=read_stores or None, max_replica_lag=max_replica_lag, routes=settings.extra.get("routes"),
        )  # fmt: skip
        keys = KeyRing(lambda: engine.open_store(create=True))
        if not settings.no_auth and not keys.list():
            err.print(
                "[yellow]no API keys yet:[/] every request will be refused until one is made with "
                "`retrievo keys create --name NAME --scope read`", highlight=False,
            )  # fmt: skip
    configure_logging()
    auth = "off (--no-auth, loopback only)" if settings.no_auth else "API keys"
    err.print(
        f"retrievo serving http://{settings.host}:{settings.port}/ — REST /api (docs /api/docs), MCP /mcp; "
        f"auth: {auth}; {settings.workers} worker(s)", highlight=False, markup=False,
    )  # fmt: skip
    # Keep-alive 75 s (nginx's default), not uvicorn's 5: a client whose pooled connection sat idle while
    # the server was busy must not have it closed under its next request (seen as resets under load).
    common = {"host": settings.host, "port": settings.port, "access_log": False, "log_level": "warning",
              "timeout_graceful_shutdown": 10, "proxy_headers": True,
              "timeout_keep_alive": KEEP_ALIVE_S}  # fmt: skip
    if settings.workers == 1:
        # The model loads beside the server's start, not before it: the port answers at once.
        threading.Thread(target=engine.warm_up, name="retrievo-warm-up", daemon=True).start()
        uvicorn.run(build_app(engine, settings, keys), **common)  # type: ignore[arg-type]
        return
    engine.close()
    # Several processes: each builds the app from the environment (uvicorn's factory mode).
    environ = {"RETRIEVO_DB": str(db) if db else None, "RETRIEVO_STORE": store,
               "RETRIEVO_READ_STORE": ",".join(read_stores) or None,
               "RETRIEVO_MAX_REPLICA_LAG": str(max_replica_lag) if max_replica_lag else None,
               "RETRIEVO_ROUTES": ";".join(f"{k}={v}" for k, v in engine.config.routes) or None}  # fmt: skip
    for field in dataclasses.fields(settings):
        value = getattr(settings, field.name)
        if field.name != "extra":
            text = ",".join(value) if isinstance(value, tuple) else str(value)
            environ[f"RETRIEVO_SERVE_{field.name.upper()}"] = text
    os.environ.update({k: v for k, v in environ.items() if v is not None})
    uvicorn.run(
        "retrievo.surfaces.http:from_environment", factory=True, workers=settings.workers,
        **common,  # type: ignore[arg-type]
    )  # fmt: skip


@main.group()
def keys() -> None:
    """API keys for `retrievo serve`: create (the secret is shown once), list, revoke."""


@keys.command(name="create")
@click.option("--name", required=True, help="Who or what uses the key.")
@click.option("--scope", type=click.Choice(SCOPES), default="read", show_default=True,
              help="read: search and read; write: also refresh and baselines; admin: also manage keys.")  # fmt: skip
@click.option(
    "--collection", "collections", multiple=True, help="Only this collection (repeatable; default all)."
)
@click.option("--expires", help="Refuse the key after this: a lifetime (30d, 12h, 90m) or an ISO date/time.")
@db_option
@json_option
def keys_create(
    name: str, scope: str, collections: tuple[str, ...], expires: str | None, db: Path | None, store: str | None,
    as_json: bool,
) -> None:  # fmt: skip
    """Create a key. Its secret is printed once and stored only as a hash: keep it somewhere safe."""
    with _errors(), _engine(db, None, store=store, embedder="none") as engine:
        key, token = KeyRing(lambda: engine.open_store(create=True)).create(name, scope, collections, expires)
    if as_json:
        click.echo(json.dumps({**dataclasses.asdict(key), "key": token}))
        return
    click.echo(token)
    err.print(
        f"key {key.key_id} ({key.name}, {key.scope}, {', '.join(key.collections) or 'all collections'}"
        f"{f', expires {key.expires_at}' if key.expires_at else ''}) — shown once; send it as "
        "`Authorization: Bearer …`", highlight=False, markup=False,
    )  # fmt: skip


@keys.command(name="list")
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked keys.")
@db_option
@json_option
def keys_list(include_revoked: bool, db: Path | None, store: str | None, as_json: bool) -> None:
    """Keys without their secrets."""
    with _errors(), _engine(db, None, store=store, embedder="none") as engine:
        found = KeyRing(engine.open_store).list(include_revoked)
    if as_json:
        click.echo(json.dumps({"keys": [dataclasses.asdict(k) for k in found]}))
        return
    table = Table("id", "name", "scope", "collections", "created", "expires", "revoked")
    for k in found:
        table.add_row(
            k.key_id, k.name, k.scope, ", ".join(k.collections) or "all", k.created_at, k.expires_at or "never",
            k.revoked_at or "",
        )  # fmt: skip
    out.print(table)


@keys.command(name="revoke")
@click.argument("key")
@db_option
def keys_revoke(key: str, db: Path | None, store: str | None) -> None:
    """Revoke KEY (its id or name); running servers refuse it within 5 seconds."""
    with _errors(), _engine(db, None, store=store, embedder="none") as engine:
        revoked = KeyRing(engine.open_store).revoke(key)
    click.echo(f"revoked key {revoked.key_id} ({revoked.name})")


@main.command()
@db_option
@click.option(
    "--collection",
    "-c",
    "collections",
    multiple=True,
    help="Serve only this collection (repeat for several; default: all). The first is the default one.",
)
@click.option(
    "--no-refresh", is_flag=True, help="Leave out the refresh_index tool: clients cannot trigger indexing."
)
@click.option(
    "--watch",
    "watch_paths",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Index this path and keep it current while serving (repeatable).",
)
@click.option("--http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="HTTP port.")
@click.option(
    "--tools",
    "toolsets",
    default="auto",
    show_default=True,
    help="Toolsets to offer, comma-separated: docs, library, similar, code, records, registry, admin (status, "
    "refresh, baselines, verify, re-embed); auto = all but similar and admin; all. A kind's tools appear once "
    "indexed.",
)
def mcp(
    db: Path | None,
    store: str | None,
    collections: tuple[str, ...],
    no_refresh: bool,
    watch_paths: tuple[Path, ...],
    http: bool,
    host: str,
    port: int,
    toolsets: str,
) -> None:
    """Serve the index to MCP clients (stdio by default; --http for streamable HTTP at /mcp).

    Clients read only what was indexed, only in the collections served; refresh_index re-reads
    only indexed folders (or is left out with --no-refresh).
    """
    from retrievo.surfaces.mcp import parse_toolsets, serve

    with _errors():
        picked = parse_toolsets(toolsets)
        engine = _engine(db, collections[0] if collections else None, store=store)
        if (
            not watch_paths
        ):  # no index to serve (a wrong --db, a store not reachable): fail now, not at a call
            engine.open_store(create=False, collection=collections[0] if collections else None)
        if watch_paths:
            from retrievo.operations.staged import in_stages, index_in_stages
            from retrievo.operations.watch import Watcher

            name = collections[0] if collections else None
            if in_stages(engine, name, embed=True):  # a new collection: searchable in seconds
                index_in_stages(engine, list(watch_paths), name)
            else:
                engine.index(list(watch_paths))
            Watcher(engine, watch_paths).start()
        serve(
            engine,
            http=http,
            host=host,
            port=port,
            collections=collections or None,
            allow_refresh=not no_refresh,
            toolsets=picked,
        )


@main.command("daemon")
@click.option("--stop", is_flag=True, help="Stop them (each finishes the calls it is running first).")
@json_option
def daemon(stop: bool, as_json: bool) -> None:
    """The resident processes that serve short calls (search, locate, status, …) for this user.

    The first short call starts one in the background; later ones are served by it without loading
    Python's libraries and the models again. RETRIEVO_DAEMON=off runs every call in its own process;
    each leaves after RETRIEVO_DAEMON_IDLE_S (600) seconds without a call.
    """
    from retrievo.surfaces.cli import resident

    place = resident.folder()
    found = []
    for path in sorted(place.glob("*.sock")) if place else []:
        answer = resident.ask(str(path), "stop" if stop else "ping")
        if answer:
            found.append(answer)
    if as_json:
        click.echo(json.dumps({"enabled": resident.enabled(), "folder": str(place), "processes": found}))
        return
    if not resident.enabled():
        out.print("resident processes are off here (RETRIEVO_DAEMON=off, or not Linux)")
    for answer in found:
        out.print(
            f"pid {answer['pid']}: {answer['served']} call(s) served, {answer['running']} running"
            + (", stopping" if answer["stopping"] else "")
            + f" ({answer['socket']})"
        )
    if not found:
        out.print(f"no resident process ({place or 'no private folder for one'})")
