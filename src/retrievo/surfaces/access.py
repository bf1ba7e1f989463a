"""Who may ask what: API keys (argon2-hashed in the store), principals, and a per-key rate limit.

A key reads ``rtv_<key_id>.<secret>``. The public ``key_id`` finds the row; the whole token is checked
against the stored argon2 hash (time 2, memory 19 MiB, the OWASP floor) once, then remembered in this
process by its SHA-256 so a busy key does not pay the hash per request. A remembered key is re-read
from the store every ``RECHECK_S`` seconds, so a revocation reaches a running server within that time.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from retrievo.errors import AccessDenied, ConfigError
from retrievo.models import ApiKey
from retrievo.store.base import Store

SCOPES = ("read", "write", "admin")
PREFIX = "rtv_"
RECHECK_S = 5.0
log = logging.getLogger("retrievo.surfaces.access")
_HASHER = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)


@dataclass(frozen=True)
class Principal:
    """The caller of one request: a key's name and rights, or the operator on a --no-auth server."""

    name: str
    scope: str
    collections: frozenset[str] | None  # None: every collection the server serves
    key_id: str | None = None

    def may(self, scope: str) -> bool:
        return SCOPES.index(self.scope) >= SCOPES.index(scope)

    def within(self, served: frozenset[str] | None) -> frozenset[str] | None:
        """The collections this caller may reach on a server that serves ``served`` (None: all)."""
        if self.collections is None:
            return served
        return self.collections if served is None else self.collections & served


def principal_of(key: ApiKey) -> Principal:
    return Principal(key.name, key.scope, frozenset(key.collections) or None, key.key_id)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class _Remembered:
    principal: Principal
    checked: float
    expires: float | None = None  # epoch seconds


class KeyRing:
    """Creates, lists, revokes and checks keys kept in one store."""

    def __init__(self, store: Callable[[], Store]) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._known: dict[str, _Remembered] = {}

    def create(
        self, name: str, scope: str = "read", collections: tuple[str, ...] = (), expires: str | None = None
    ) -> tuple[ApiKey, str]:
        """A new key and its token; the token is shown to the person once and never stored. ``expires``:
        a lifetime (``30d``, ``12h``, ``90m``) or an ISO time; refused from then on."""
        if scope not in SCOPES:
            raise ConfigError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        if not name.strip() or len(name) > 200:
            raise ConfigError("a key needs a name of 1-200 characters (who or what uses it)")
        expires_at = expiry(expires) if expires is not None else None
        key = ApiKey(
            secrets.token_hex(6),
            name.strip(),
            scope,
            tuple(sorted(set(collections))),
            _now(),
            None,
            expires_at,
        )
        token = f"{PREFIX}{key.key_id}.{secrets.token_urlsafe(32)}"
        self._store().save_key(key, _HASHER.hash(token))
        return key, token

    def list(self, include_revoked: bool = False) -> list[ApiKey]:
        return self._store().api_keys(include_revoked)

    def revoke(self, key_id_or_name: str) -> ApiKey:
        key = self._store().revoke_key(key_id_or_name, _now())
        with self._lock:
            self._known = {k: v for k, v in self._known.items() if v.principal.key_id != key.key_id}
        return key

    def _recall(self, token: str) -> tuple[str, _Remembered | None] | None:
        """(the token's digest, what this ring remembers of it); None for a token not shaped like a key."""
        if not token.startswith(PREFIX) or "." not in token or len(token) > 200:
            return None
        digest = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            return digest, self._known.get(digest)

    def vouched(self, token: str) -> bool:
        """Whether this token was accepted before (in this process): failure throttling never holds it up."""
        recalled = self._recall(token)
        return recalled is not None and recalled[1] is not None

    def remembered(self, token: str) -> Principal | None:
        """The principal of a token ``authenticate`` accepted less than RECHECK_S ago, else None: no store
        read and no slow hash, so a server checks it on its event loop (a worker thread cost more)."""
        recalled = self._recall(token)
        entry = recalled[1] if recalled is not None else None
        return entry.principal if entry is not None and _fresh(entry, time.monotonic()) else None

    def authenticate(self, token: str) -> Principal:
        """The principal of a valid, unrevoked token; AccessDenied (saying nothing more) otherwise."""
        denied = AccessDenied("a valid API key is required (Authorization: Bearer rtv_…)")
        recalled = self._recall(token)
        if recalled is None:
            raise denied
        digest, remembered = recalled
        now = time.monotonic()
        if remembered is not None and _fresh(remembered, now):
            return remembered.principal
        key_id = token[len(PREFIX) :].split(".", 1)[0]
        found = self._store().key_secret(key_id)
        if found is None or found[0].revoked_at is not None or expired(found[0]):
            raise denied
        key, secret_hash = found
        if remembered is None:
            try:
                _HASHER.verify(secret_hash, token)
            except (VerificationError, InvalidHashError):
                raise denied from None
        principal = principal_of(key)
        with self._lock:
            self._known[digest] = _Remembered(principal, now, _epoch(key.expires_at))
        return principal


def _fresh(remembered: _Remembered, now: float) -> bool:
    alive = remembered.expires is None or time.time() < remembered.expires
    return alive and now - remembered.checked < RECHECK_S


UNITS = {"m": 60, "h": 3600, "d": 86400}


def expiry(expires: str, now: datetime | None = None) -> str:
    """``30d`` / ``12h`` / ``90m`` from now, or an ISO date or time, as the ISO UTC time a key expires."""
    text = expires.strip()
    start = now or datetime.now(UTC)
    if len(text) > 1 and text[-1] in UNITS and text[:-1].isdigit():
        at = start + timedelta(seconds=int(text[:-1]) * UNITS[text[-1]])
    else:
        try:
            at = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(
                f"--expires {expires!r}: give a lifetime (30d, 12h, 90m) or an ISO date or time (2027-01-31)"
            ) from None
        at = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    if at <= start:
        raise ConfigError(f"--expires {expires!r} is not in the future")
    return at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _epoch(iso: str | None) -> float | None:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() if iso else None


def expired(key: ApiKey) -> bool:
    at = _epoch(key.expires_at)
    return at is not None and time.time() >= at


@dataclass
class TokenBucket:
    """``rate`` requests a second on average, bursts up to ``burst``; one bucket per key."""

    rate: float
    burst: float
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    rates: dict[str, float] = field(default_factory=dict)  # a key's own refill rate (SharedRate sets it)
    served: dict[str, int] = field(default_factory=dict)  # requests let through since SharedRate last looked

    def _level(self, who: str, now: float) -> float:
        """``who``'s tokens now (the caller holds the lock)."""
        tokens, last = self._buckets.get(who, (self.burst, now))
        return min(self.burst, tokens + (now - last) * self.rates.get(who, self.rate))

    def take(self, who: str) -> float:
        """0 when the request may go ahead, else the seconds until it could."""
        now = time.monotonic()
        rate = self.rates.get(who, self.rate)
        with self._lock:
            tokens = self._level(who, now)
            if tokens >= 1:
                self._buckets[who] = (tokens - 1, now)
                self.served[who] = self.served.get(who, 0) + 1
                return 0.0
            self._buckets[who] = (tokens, now)
            return (1 - tokens) / rate

    def drain_served(self) -> dict[str, int]:
        with self._lock:
            served, self.served = self.served, {}
        return served


@dataclass
class FailureThrottle(TokenBucket):
    """Failed logins cost the server an argon2 hash each (~24 ms of CPU): after ``burst`` failures for one
    key id, or from one client, more attempts wait (429 with Retry-After) while the allowance refills at
    ``rate`` a second. A token bucket that only failures spend, and a token accepted before is never held
    up, so someone guessing at a key cannot lock its owner out. One attempt every 10 seconds (six a
    minute, not sixty) also means that ten failures made on a slow or busy machine, which may take a
    second or more, have not refilled the allowance by the eleventh."""

    rate: float = 0.1
    burst: float = 10.0

    def wait(self, *who: str) -> float:
        """0 when an attempt for all of ``who`` may be checked now, else the seconds until it could."""
        now = time.monotonic()
        with self._lock:
            short = max((1 - self._level(w, now) for w in who), default=0.0)
        return max(0.0, short / self.rate)

    def failed(self, *who: str) -> None:
        now = time.monotonic()
        with self._lock:
            for w in who:
                self._buckets[w] = (max(0.0, self._level(w, now) - 1), now)
            if len(self._buckets) > 100_000:  # bounded: a flood of made-up ids forgets the refilled ones
                self._buckets = {w: v for w, v in self._buckets.items() if self._level(w, now) < self.burst}


class SharedRate:
    """One key's rate across the servers of one store: each second a server publishes how many requests
    each key made through it (``Store.record_usage``) and reads what the others served in the last
    ``WINDOW_S`` seconds; its own refill rate for the key becomes the rate less the others' share (at
    least ``FLOOR`` of it). A key whose requests are spread over N servers gets the rate in all, not N
    times it, within about a second; bursts stay per server."""

    WINDOW_S = 2
    FLOOR = 0.1

    def __init__(self, bucket: TokenBucket, store: Callable[[], Store], server: str) -> None:
        self.bucket, self.store, self.server = bucket, store, server
        self._pending: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="retrievo-rate", daemon=True)

    def sync(self, now: float | None = None) -> None:
        second = int(now if now is not None else time.time())
        for who, count in self.bucket.drain_served().items():
            self._pending[who] = self._pending.get(who, 0) + count
        store = self.store()
        store.record_usage(self.server, second, self._pending)
        self._pending = {}
        others = store.usage_since(second - self.WINDOW_S + 1, self.server)
        rate = self.bucket.rate
        self.bucket.rates = {
            who: max(rate * self.FLOOR, rate - used / self.WINDOW_S) for who, used in others.items()
        }

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.sync()
            except Exception as exc:  # the store away: each server limits alone meanwhile
                log.warning("shared rate limit: %s", exc)
                self.bucket.rates = {}

    def start(self) -> SharedRate:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
