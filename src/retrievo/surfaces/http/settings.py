"""Settings of ``retrievo serve``: a TOML file, then ``RETRIEVO_SERVE_*`` variables, then flags (last wins)."""

from __future__ import annotations

import ipaddress
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from retrievo.errors import ConfigError
from retrievo.surfaces.mcp import parse_toolsets

LOOPBACK_NAMES = ("localhost",)


@dataclass(frozen=True)
class ServeSettings:
    host: str = "127.0.0.1"
    port: int = 8765
    workers: int = 1
    no_auth: bool = False  # only on a loopback address
    collections: tuple[str, ...] = ()  # the only collections this server serves (empty: all)
    allow_refresh: bool = True  # write keys may re-index indexed paths and create baselines
    cors_origins: tuple[str, ...] = ()  # CORS is off unless origins are named
    rate: float = 50.0  # requests a second per key, on average
    burst: float = 100.0  # requests a key may make at once
    log_queries: bool = False  # request logs never carry query text unless this is set
    max_body_bytes: int = 1_000_000
    tools: tuple[str, ...] = ("auto",)  # MCP toolsets (surfaces/mcp/toolsets.py); REST has every tool
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def check(self) -> ServeSettings:
        if self.no_auth and not is_loopback(self.host):
            raise ConfigError(
                f"--no-auth serves without keys, so it is refused on {self.host!r}, which is not a loopback address: "
                "bind 127.0.0.1 (or ::1) "
                "or create a key with `retrievo keys create`"
            )
        if not 0 < self.port < 65536:
            raise ConfigError(f"port must be 1-65535, not {self.port}")
        if self.workers < 1:
            raise ConfigError("workers must be at least 1")
        if self.rate <= 0 or self.burst < 1:
            raise ConfigError("rate must be above 0 and burst at least 1")
        parse_toolsets(self.tools)
        return self


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _coerce(name: str, value: Any, default: Any) -> Any:
    try:
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError(text)
            return text in ("1", "true", "yes", "on")
        if isinstance(default, tuple):
            items = value if isinstance(value, list | tuple) else str(value).split(",")
            return tuple(str(item).strip() for item in items if str(item).strip())
        return type(default)(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"serve setting {name!r}: cannot read {value!r} as {type(default).__name__}"
        ) from None


STORE_KEYS = ("store", "db", "read_store", "max_replica_lag")  # the engine's, not the server's


def load(
    path: Path | None, overrides: dict[str, Any], environ: dict[str, str] | None = None
) -> ServeSettings:
    """File (the ``[serve]`` table, or the whole file), environment, then ``overrides`` (None: not given)."""
    environ = dict(os.environ) if environ is None else environ
    defaults = ServeSettings()
    names = {f.name: getattr(defaults, f.name) for f in fields(defaults) if f.name != "extra"}
    values: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read the config file {path}: {exc.strerror}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"the config file {path} is not valid TOML: {exc}") from exc
        table = data.get("serve", data)
        unknown = sorted(set(table) - set(names) - set(STORE_KEYS) - {"routes"})
        if unknown:
            raise ConfigError(
                f"unknown serve settings in {path}: {', '.join(unknown)}; known: {', '.join(names)}"
            )
        values.update({k: _coerce(k, v, names[k]) for k, v in table.items() if k in names})
        extra = {k: table[k] for k in STORE_KEYS if k in table}
        if isinstance(data.get("routes"), dict):  # [routes]: collection = "postgresql://…" or an index file
            extra["routes"] = data["routes"]
    else:
        extra = {}
    for name, default in names.items():
        raw = environ.get(f"RETRIEVO_SERVE_{name.upper()}")
        if raw is not None:
            values[name] = _coerce(name, raw, default)
    values.update({k: _coerce(k, v, names[k]) for k, v in overrides.items() if v is not None and k in names})
    return replace(defaults, **values, extra=extra).check()
