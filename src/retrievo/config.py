"""Settings shared by every surface: one declarative table (name, default, env var, help)."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from retrievo.errors import ConfigError

DEFAULT_DB = Path.home() / ".retrievo" / "index.db"
DEFAULT_CACHE_DIR = Path.home() / ".retrievo" / "cache"


@dataclass(frozen=True)
class Setting:
    name: str
    env: str
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting("db", "RETRIEVO_DB", f"index file (default {DEFAULT_DB})"),
    Setting(
        "store", "RETRIEVO_STORE", "postgresql://… to use PostgreSQL + pgvector instead of the --db file"
    ),
    Setting("ef_search", "RETRIEVO_EF_SEARCH", "PostgreSQL HNSW ef_search (default 100)"),
    Setting(
        "read_stores",
        "RETRIEVO_READ_STORE",
        "postgresql://… streaming replicas of --store for searches and reads (comma-separated)",
    ),
    Setting(
        "routes",
        "RETRIEVO_ROUTES",
        "collections on other stores: name=postgresql://…;name=/path/index.db (the rest: the default store)",
    ),
    Setting(
        "max_replica_lag",
        "RETRIEVO_MAX_REPLICA_LAG",
        "seconds a replica may be behind before reads skip it (default 10)",
    ),
    Setting(
        "cache_dir",
        "RETRIEVO_CACHE_DIR",
        "folder for a PostgreSQL store's local side indexes and the model's prepared graph "
        "(default ~/.retrievo/cache)",
    ),
    Setting("collection", "RETRIEVO_COLLECTION", "collection to read and write (default 'default')"),
    Setting("embedder", "RETRIEVO_EMBEDDER", "local | static | openai | ollama | none (default local)"),
    Setting("embed_url", "RETRIEVO_EMBED_URL", "base URL of an HTTP embedding provider"),
    Setting("embed_model", "RETRIEVO_EMBED_MODEL", "model name at the HTTP provider"),
    Setting("embed_api_key", "RETRIEVO_EMBED_API_KEY", "API key for the HTTP provider (never logged)"),
    Setting(
        "embed_concurrency",
        "RETRIEVO_EMBED_CONCURRENCY",
        "embedding requests in flight at once to an HTTP provider (default 4, 1-64)",
    ),
    Setting(
        "max_file_bytes", "RETRIEVO_MAX_FILE_BYTES", "files larger than this are skipped (default 10 MB)"
    ),
    Setting(
        "fusion",
        "RETRIEVO_FUSION",
        "hybrid fusion: adaptive (default: z-score, arms weighted per query), zscore, rrf",
    ),
    Setting("rrf_k", "RETRIEVO_RRF_K", "Reciprocal Rank Fusion constant k (default 60)"),
    Setting(
        "code_ranking",
        "RETRIEVO_CODE_RANKING",
        "on (default) | off: code questions ranked by file evidence, source before tests and docs",
    ),
    Setting(
        "staged",
        "RETRIEVO_STAGED",
        "on (default) | off: a new collection is embedded by the static model first and moved to the "
        "bundled one in the background (`retrievo index`; operations/staged.py)",
    ),
    Setting(
        "rewrite_url",
        "RETRIEVO_REWRITE_URL",
        "OpenAI-compatible chat base URL of a query rewriter (off unset)",
    ),
    Setting("rewrite_model", "RETRIEVO_REWRITE_MODEL", "model name for the query rewriter"),
    Setting("rewrite_api_key", "RETRIEVO_REWRITE_API_KEY", "API key for the query rewriter (never logged)"),
    Setting(
        "rerank_url",
        "RETRIEVO_RERANK_URL",
        "base URL of a /rerank endpoint (Cohere/Jina/TEI shape; off unset)",
    ),
    Setting("rerank_model", "RETRIEVO_RERANK_MODEL", "model name at the rerank endpoint"),
    Setting("rerank_api_key", "RETRIEVO_RERANK_API_KEY", "API key for the rerank endpoint (never logged)"),
    Setting(
        "rerank_path", "RETRIEVO_RERANK_PATH", "folder with a cross-encoder's model.onnx + tokenizer.json"
    ),
    Setting("rerank_depth", "RETRIEVO_RERANK_DEPTH", "fused hits the reranker reorders (default 30)"),
    Setting(
        "reread_depth",
        "RETRIEVO_REREAD_DEPTH",
        "fused hits a collection on the move reads again with the model it moves to (default 20; 0: off)",
    ),
    Setting(
        "query_threads",
        "RETRIEVO_QUERY_THREADS",
        "threads one search may use (BLAS, the arms; default 1: parallel across searches, not inside one)",
    ),
)


DEFAULT_COLLECTION = "default"  # the collection a call means when it names none (and one of that name exists)


@dataclass(frozen=True)
class Config:
    db: Path = DEFAULT_DB
    store: str | None = None
    ef_search: int = 100
    cache_dir: Path | None = None
    collection: str = DEFAULT_COLLECTION
    embedder: str = "local"
    embed_url: str | None = None
    embed_model: str | None = None
    embed_api_key: str | None = None
    embed_concurrency: int = 4
    max_file_bytes: int = 10 * 1024 * 1024
    rrf_k: int = 60
    fusion: str = "adaptive"
    code_ranking: str = "on"
    staged: str = "on"
    rewrite_url: str | None = None
    rewrite_model: str | None = None
    rewrite_api_key: str | None = None
    rerank_url: str | None = None
    rerank_model: str | None = None
    rerank_api_key: str | None = None
    rerank_path: str | None = None
    rerank_depth: int = 30
    reread_depth: int = 20
    query_threads: int = 1
    read_stores: tuple[str, ...] = ()
    max_replica_lag: float = 10.0
    routes: tuple[tuple[str, str], ...] = ()  # (collection, store URL or index file), engine/routes.py

    def __post_init__(self) -> None:
        if not isinstance(self.db, Path):  # Config(db="index.db") from the Python API
            object.__setattr__(self, "db", Path(self.db).expanduser())

    def __repr__(self) -> str:
        # The API key must never reach a log line or a traceback.
        shown = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name
            not in ("embed_api_key", "store", "rewrite_api_key", "rerank_api_key", "read_stores", "routes")
        }
        from retrievo.secrets import redact

        if self.store:
            shown["store"] = redact(self.store)
        shown["read_stores"] = tuple(redact(url) for url in self.read_stores)
        shown["routes"] = tuple((name, redact(url)) for name, url in self.routes)
        return f"Config({shown}, embed_api_key={'***' if self.embed_api_key else None})"

    @classmethod
    def from_env(cls, **overrides: Any) -> Config:
        """Defaults, then environment variables, then explicit (non-None) overrides."""
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            raw = os.environ.get(setting.env)
            if raw:
                values[setting.name] = raw
        if "embed_api_key" not in values and os.environ.get("OPENAI_API_KEY"):
            values["embed_api_key"] = os.environ["OPENAI_API_KEY"]
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls()._with(values)

    def _with(self, values: dict[str, Any]) -> Config:
        typed: dict[str, Any] = {}
        for name, value in values.items():
            try:
                if name in ("db", "cache_dir"):
                    typed[name] = Path(value).expanduser()
                elif name in (
                    "max_file_bytes",
                    "rrf_k",
                    "ef_search",
                    "rerank_depth",
                    "reread_depth",
                    "query_threads",
                    "embed_concurrency",
                ):
                    typed[name] = int(value)
                elif name == "max_replica_lag":
                    typed[name] = float(value)
                elif name == "routes":
                    typed[name] = _routes(value)
                elif name == "read_stores":
                    urls = value.split(",") if isinstance(value, str) else list(value)
                    typed[name] = tuple(u.strip() for u in urls if u.strip())
                else:
                    typed[name] = str(value)
            except ValueError as exc:
                raise ConfigError(f"setting {name!r} must be a whole number, got {value!r}") from exc
        config = replace(self, **typed)
        if config.store and not config.store.startswith(("postgresql://", "postgres://")):
            raise ConfigError(f"--store must be a postgresql:// URL, got {config.store.split(':')[0]}://…")
        if config.read_stores and not config.store:
            raise ConfigError("--read-store names replicas of a PostgreSQL --store; give --store too")
        if any(not u.startswith(("postgresql://", "postgres://")) for u in config.read_stores):
            raise ConfigError("every --read-store must be a postgresql:// URL")
        if config.code_ranking not in ("on", "off"):
            raise ConfigError(f"code_ranking is on or off, got {config.code_ranking!r}")
        if config.staged not in ("on", "off"):
            raise ConfigError(f"staged is on or off, got {config.staged!r}")
        if config.fusion not in ("adaptive", "zscore", "rrf"):
            raise ConfigError(f"unknown fusion {config.fusion!r}; choose adaptive, zscore or rrf")
        if not 1 <= config.query_threads <= 64:
            raise ConfigError(f"query_threads must be 1-64, got {config.query_threads}")
        if not 1 <= config.embed_concurrency <= 64:
            raise ConfigError(f"embed_concurrency must be 1-64, got {config.embed_concurrency}")
        if not 1 <= config.rerank_depth <= 1000:
            raise ConfigError(f"rerank_depth must be 1-1000, got {config.rerank_depth}")
        if not 0 <= config.reread_depth <= 1000:
            raise ConfigError(f"reread_depth must be 0-1000 (0: off), got {config.reread_depth}")
        if config.rrf_k < 1:
            raise ConfigError(f"rrf_k must be at least 1, got {config.rrf_k}")
        if config.embedder not in ("local", "static", "openai", "ollama", "none"):
            raise ConfigError(
                f"unknown embedder {config.embedder!r}; choose one of local, static, openai, ollama, none"
            )
        return config


def _routes(value: Any) -> tuple[tuple[str, str], ...]:
    """``name=URL;name=path`` (the environment), a {name: URL} table (TOML) or pairs (Python)."""
    if isinstance(value, str):
        pairs = [part.split("=", 1) for part in value.split(";") if part.strip()]
    elif isinstance(value, dict):
        pairs = [[str(k), str(v)] for k, v in value.items()]
    else:
        pairs = [list(pair) for pair in value]
    routes: dict[str, str] = {}
    for pair in pairs:
        if len(pair) != 2 or not pair[0].strip() or not pair[1].strip():
            raise ConfigError(f"a route is COLLECTION=STORE (postgresql://… or an index file), got {pair!r}")
        routes[pair[0].strip()] = pair[1].strip()
    return tuple(sorted(routes.items()))


def cache_folder(config: Config) -> Path:
    """Where side indexes and prepared model graphs are kept: the configuration's ``cache_dir``, else
    ``RETRIEVO_CACHE_DIR``, else ``~/.retrievo/cache``."""
    if config.cache_dir is not None:
        return config.cache_dir
    raw = os.environ.get("RETRIEVO_CACHE_DIR")
    return Path(raw).expanduser() if raw else DEFAULT_CACHE_DIR
