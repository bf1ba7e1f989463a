"""An optional query rewriter (seed 002's QueryProcessor): any OpenAI-compatible chat endpoint.

Off by default (``RETRIEVO_REWRITE_URL`` unset): the offline search stands on its own. When set, each
new query is sent once (answers are cached) with a request for the code entities it names or implies
and up to two rephrasings; entities join the structural arm's names and, with the rephrasings, the
keyword arm's text. The dense arm always embeds the user's own words. Any failure — unreachable,
slow, malformed — is logged and the query runs as typed. The API key travels only in the header.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

log = logging.getLogger(__name__)
CACHE_SIZE = 256
MAX_ITEMS = 8
PROMPT = (
    "You help a code search engine. For the developer question below, list the code entities it names or "
    "implies (class, function, method, module or file names, as they would be spelled in code) and up to two "
    "short rephrasings using the words code would use. Answer with JSON only: "
    '{"entities": ["..."], "rephrasings": ["..."]}'
)
_JSON = re.compile(r"\{.*\}", re.DOTALL)
_ENTITY = re.compile(r"^[A-Za-z_][\w.:]{0,199}$")


@dataclass(frozen=True)
class Rewrite:
    entities: tuple[str, ...] = ()
    rephrasings: tuple[str, ...] = ()


class QueryRewriter:
    def __init__(
        self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 10.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key
        import httpx  # here, not at the top: a search without this service never loads it

        self._client = httpx.Client(timeout=timeout_s)
        self._cache: OrderedDict[str, Rewrite] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"QueryRewriter(base_url={self.base_url!r}, model={self.model!r})"

    def rewrite(self, query: str) -> Rewrite:
        with self._lock:
            if query in self._cache:
                self._cache.move_to_end(query)
                return self._cache[query]
        result = self._ask(query)
        with self._lock:
            self._cache[query] = result
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return result

    def _ask(self, query: str) -> Rewrite:
        import httpx

        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [{"role": "system", "content": PROMPT}, {"role": "user", "content": query[:2000]}],
        }
        try:
            response = self._client.post(f"{self.base_url}/chat/completions", json=body, headers=headers)
            response.raise_for_status()
            content = response.json()["choices"][0]["message"]["content"]
            match = _JSON.search(content)
            data = json.loads(match.group(0) if match else content)
            entities = [str(e).strip() for e in data.get("entities", []) if _ENTITY.match(str(e).strip())]
            rephrasings = [str(r).strip()[:300] for r in data.get("rephrasings", []) if str(r).strip()]
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            log.warning("query rewriter unavailable (%s); searching the query as typed", type(exc).__name__)
            return Rewrite()
        return Rewrite(tuple(entities[:MAX_ITEMS]), tuple(rephrasings[:2]))
