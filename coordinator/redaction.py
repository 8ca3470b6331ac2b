"""Secrets are never printed or stored: what `***` replaces in settings written out.

The agents' token, and in store options every value under a secret-sounding key
(password, secret, token, ...), the password of a URI (`scheme://user:PASSWORD@host`)
and libpq's `password=...` keyword. The live settings keep the real values: only
what is serialized (the results store, check-config, exports) is redacted.
"""

import re
from typing import Any

REDACTED = "***"
SECRET_KEY = re.compile(r"pass(word|wd)?|secret|token|api_?key|credential", re.IGNORECASE)
URI_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)[^@\s]*(?P<at>@)")
KEYWORD_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def redact_text(text: str) -> str:
    text = URI_PASSWORD.sub(rf"\g<head>{REDACTED}\g<at>", text)
    return KEYWORD_PASSWORD.sub(rf"\g<head>{REDACTED}", text)


def redact_value(key: str, value: Any) -> Any:
    if SECRET_KEY.search(key) and value not in (None, ""):
        return REDACTED
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return redact_options(value)
    if isinstance(value, list):
        return [redact_value(key, v) for v in value]
    return value


def redact_options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: redact_value(str(k), v) for k, v in options.items()}


def redacted_paths(options: dict[str, Any], prefix: str = "store.options") -> list[str]:
    """Dotted paths of the options a recorded rating lost to redaction."""
    out = []
    for k, v in options.items():
        path = f"{prefix}.{k}"
        if isinstance(v, dict):
            out += redacted_paths(v, path)
        elif isinstance(v, str) and REDACTED in v:
            out.append(path)
    return out


def redact_config(config: dict[str, Any]) -> dict[str, Any]:
    """A settings dict as written out (for records written before redaction existed)."""
    out = dict(config)
    agents = dict(out.get("agents") or {})
    if agents.get("token"):
        agents["token"] = REDACTED
    out["agents"] = agents
    store = dict(out.get("store") or {})
    store["options"] = redact_options(store.get("options") or {})
    out["store"] = store
    return out
