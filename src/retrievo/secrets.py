"""Secrets never reach output: every store URL, DSN or message that may carry one goes through here."""

from __future__ import annotations

import re

_USERINFO = re.compile(r"(//[^:/@\s]*:)\S*@")
# password=…, sslpassword=…, passfile … in a URL query or a key=value DSN (quoted values too).
_PARAM = re.compile(
    r"(?i)\b((?:ssl)?password|passfile|sslkey|api[_-]?key|token)(\s*=\s*)('(?:[^'\\]|\\.)*'|[^&\s]*)"
)
MASK = "***"


def redact(text: str) -> str:
    """``text`` with passwords in URLs and DSNs replaced by ``***`` (anything else unchanged)."""
    text = _USERINFO.sub(lambda m: m.group(1) + MASK + "@", text)
    return _PARAM.sub(lambda m: m.group(1) + m.group(2) + MASK, text)


def redact_all(text: str, *secrets: str | None) -> str:
    """``redact``, and every literal secret given (an API key, a whole URL) removed wherever it appears."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, redact(secret))
    return redact(text)
