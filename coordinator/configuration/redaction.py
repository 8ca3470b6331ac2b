"""Secrets are never printed or stored: one rule for what `***` replaces.

A name says it holds a secret when a word of it (split at `_ - .` and camelCase) contains
password, passwd, passphrase, secret, token, credential or apikey, is pass, pwd, pw or
creds, or ends in key (api_key, sslkey, accessKey; not keyspace, keys or key_file). Then:

- in settings (store options, a campaign job's settings), the value under such a name;
- in any text (a DSN, a URI, a message, a line of a file), the value of `NAME=value` and
  `NAME: value` (libpq keyword/value strings, quoted values with escapes as libpq reads
  them, URI query parameters `?token=...&`, Python and JSON dicts), and the password of a
  URI (`scheme://user:PASSWORD@host`, up to the last @);
- in a stored source file (a campaign file and its includes), the values under such keys
  in the YAML itself (block scalars, nested mappings and lists, the anchor an alias names),
  then the text rule over the whole text (comments, DSNs and URIs inside values).

The live settings keep the real values: only what is serialized (the results store,
check-config, exports, reports, the deck) is redacted.
"""

import json
import re
from typing import Any
from urllib.parse import unquote

import yaml

REDACTED = "***"
_SECRET_PART = re.compile(r"password|passwd|passphrase|secret|token|credential|apikey")
_SECRET_WORDS = frozenset({"pass", "pwd", "pw", "creds"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORDS = re.compile(r"[^a-z0-9]+")

# NAME followed by = or :, not inside another name; NAME may be quoted (dicts, JSON).
_KEYWORD = re.compile(
    r"(?<![\w.%-])(?P<quote>[\"']?)(?P<name>[A-Za-z_][\w.%-]*)(?P=quote)[ \t]*(?P<sep>[=:])[ \t]*"
)
_QUOTED = re.compile(
    r"\"\"\"[\s\S]*?(?:\"\"\"|$)|'''[\s\S]*?(?:'''|$)"  # TOML multi-line strings
    r"|'(?:[^'\\]|\\[\s\S])*(?:'|$)|\"(?:[^\"\\]|\\[\s\S])*(?:\"|$)"
)
_BARE = re.compile(r"(?:\\[\s\S]|[^\s\\])*\\?")  # libpq: up to white space, \ escapes
_QUERY_VALUE = re.compile(r"[^&#\s\"]*")  # a URI query parameter's value
_URI = re.compile(r"(?<![\w.+-])[A-Za-z][A-Za-z0-9+.-]*://(?P<rest>\S*)")
_TRAILING = ",;)]}'\""  # around a URI in text, not part of it


def is_secret_name(name: str) -> bool:
    """Whether a setting, keyword or parameter of this name holds a secret."""
    words = [w for w in _WORDS.split(_CAMEL.sub("_", name).lower()) if w]
    return bool(words) and (
        any(_SECRET_PART.search(w) or w in _SECRET_WORDS for w in words)
        or words[-1].endswith("key")
    )


def _keyword_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the values of secret-named `NAME=value` and `NAME: value` in text."""
    spans: list[tuple[int, int]] = []
    for m in _KEYWORD.finditer(text):
        if not is_secret_name(unquote(m["name"])) or (spans and m.start() < spans[-1][1]):
            continue
        start = m.end()
        in_query = m.start() > 0 and text[m.start() - 1] in "?&;" and m["sep"] == "="
        quoted = None if in_query else _QUOTED.match(text, start)
        if quoted is not None:  # keep the quotes: the text stays well formed
            q = 3 if quoted[0][:3] in ('"""', "'''") else 1
            end_q = q if len(quoted[0]) >= 2 * q and quoted[0].endswith(quoted[0][:q]) else 0
            spans.append((start + q, quoted.end() - end_q))
            continue
        value = (_QUERY_VALUE if in_query else _BARE).match(text, start)
        assert value is not None  # both match the empty string
        if value.end() > start:
            spans.append((start, value.end()))
    return spans


def _userinfo_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the passwords of URIs: `scheme://user:PASSWORD@`, to the last @ of the
    URI (an unencoded @, /, ? or # in a password still counts as the password's)."""
    spans = []
    for m in _URI.finditer(text):
        rest = m["rest"].rstrip(_TRAILING)
        at = rest.rfind("@")
        colon = rest.find(":", 0, at) if at > 0 else -1
        if colon >= 0 and at > colon + 1:
            base = m.start("rest")
            spans.append((base + colon + 1, base + at))
    return spans


def _replace(text: str, spans: list[tuple[int, int]]) -> str:
    out, at = [], 0
    for start, end in sorted(spans):
        if end <= at:
            continue
        start = max(start, at)
        if text[start:end] != REDACTED:
            out += [text[at:start], REDACTED]
        else:
            out.append(text[at:end])
        at = end
    return "".join([*out, text[at:]])


def redact_text(text: str) -> str:
    """The text with every secret value of a DSN, URI or `NAME=value` replaced by ***."""
    return _replace(text, _keyword_spans(text) + _userinfo_spans(text))


def redact_value(key: str, value: Any) -> Any:
    if is_secret_name(key) and value not in (None, "") and not isinstance(value, bool):
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


def redact_strings(value: Any, keep: tuple[str, ...] = ("_hist",)) -> Any:
    """A recorded result (JSON data) with every string redacted as text and every value
    under a secret name replaced; values under keys ending in `keep` (encoded
    histograms) are data, not text, and stay."""
    if isinstance(value, dict):
        return {k: _redact_entry(str(k), v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_strings(v, keep) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def _redact_entry(key: str, value: Any, keep: tuple[str, ...]) -> Any:
    # One walk: redacting the redacted again (redact_value) would reach the histograms
    # below it without `keep`, and a base64 histogram ending "pw==" is not a password.
    if key.endswith(keep):
        return value
    if is_secret_name(key) and value not in (None, "") and not isinstance(value, bool):
        return REDACTED
    return redact_strings(value, keep)


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
    results = out.get("results")
    if isinstance(results, dict) and isinstance(results.get("url"), str):
        out["results"] = {**results, "url": redact_text(results["url"])}  # a URL's password
    return out


# -- stored source text --------------------------------------------------------------
_NODE_PREFIX = re.compile(r"(?:[&!]\S*\s+)*")  # an anchor or a tag before a value
_LITERAL = re.compile(
    r"#[^\n]*|\"\"\"[\s\S]*?(?:\"\"\"|$)|'''[\s\S]*?(?:'''|$)"
    r"|\"(?:[^\"\\\n]|\\.)*(?:\"|$)|'[^'\n]*(?:'|$)"
)
_COMMENT = re.compile(r"(?:^|(?<=\s))#[^\n]*", re.MULTILINE)


def redact_source(text: str) -> str:
    """A settings or campaign file's text as stored: the values under secret keys in its
    YAML, and secrets inside every other value, key and comment (redact_text), replaced
    by ***. Text that is not YAML (a TOML file, a damaged record) gets the text rule."""
    try:
        spans = _yaml_spans(text)
    except (yaml.YAMLError, RecursionError, ValueError):
        return _replace_nodes(text, _literal_spans(text))
    return _replace_nodes(text, spans + _comment_spans(text, spans))


def _literal_spans(text: str) -> list[tuple[int, int, str]]:
    """Not YAML: the text rule over the text with its string literals and comments
    masked (`password = "x"` redacts x), then within each literal and comment."""
    masked, inner = list(text), []
    for m in _LITERAL.finditer(text):
        q = 0 if m[0].startswith("#") else 3 if m[0][:3] in ('"""', "'''") else 1
        start, end = m.start() + q, m.end() - (q if len(m[0]) >= 2 * q else 0)
        masked[start:end] = "x" * (end - start)
        inner.append((start, end))
    outer = _keyword_spans("".join(masked)) + _userinfo_spans("".join(masked))
    out = [(start, end, REDACTED) for start, end in outer]
    for start, end in inner:
        if not any(s <= start < e for s, e in outer):
            shown = redact_text(text[start:end])
            if shown != text[start:end]:
                out.append((start, end, shown))
    return out


def _yaml_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, replacement) of each scalar to rewrite, over every document."""
    out: dict[int, tuple[int, int, str]] = {}
    seen: set[tuple[int, bool]] = set()
    for document in yaml.compose_all(text, Loader=yaml.SafeLoader):
        if isinstance(document, yaml.ScalarNode):  # TOML reads as one YAML scalar
            raise ValueError("not a YAML mapping")
        if document is not None:
            _walk(document, False, text, out, seen)
    return list(out.values())


def _comment_spans(text: str, scalars: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Comments (a # outside every scalar) with their secrets redacted."""
    inside = sorted((start, end) for start, end, _ in scalars)
    out = []
    for m in _COMMENT.finditer(text):
        if any(start <= m.start() < end for start, end in inside):
            continue
        shown = redact_text(m[0])
        if shown != m[0]:
            out.append((m.start(), m.end(), shown))
    return out


def _walk(
    node: yaml.Node,
    secret: bool,
    text: str,
    out: dict[int, tuple[int, int, str]],
    seen: set[tuple[int, bool]],
) -> None:
    # An alias is the node it names: each node is visited once (a nested alias bomb
    # stays linear) and, under a secret key, the anchored value is redacted where written.
    if (id(node), secret) in seen:
        return
    seen.add((id(node), secret))
    if isinstance(node, yaml.ScalarNode):
        start, end = node.start_mark.index, node.end_mark.index
        written = text[start:end]
        shown = _secret_scalar(written) if secret else _text_scalar(written, str(node.value))
        if shown is not None and (secret or id(node) not in out):
            out[id(node)] = (start, end, shown)
        return
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _walk(item, secret, text, out, seen)
        return
    assert isinstance(node, yaml.MappingNode)
    for key, value in node.value:
        name = str(key.value) if isinstance(key, yaml.ScalarNode) else ""
        _walk(key, False, text, out, seen)
        _walk(value, secret or is_secret_name(name), text, out, seen)


def _secret_scalar(written: str) -> str:
    prefix = _NODE_PREFIX.match(written)
    head = prefix[0] if prefix else ""
    tail = written[len(written.rstrip()) :]  # a block scalar's line breaks
    return f'{head}"{REDACTED}"{tail}'


def _text_scalar(written: str, value: str) -> str | None:
    redacted = redact_text(value)
    if redacted == value:
        return None
    prefix = _NODE_PREFIX.match(written)
    head = prefix[0] if prefix else ""
    tail = written[len(written.rstrip()) :]
    return f"{head}{json.dumps(redacted)}{tail}"


def _replace_nodes(text: str, spans: list[tuple[int, int, str]]) -> str:
    out, at = [], 0
    for start, end, shown in sorted(spans):
        if start < at:
            continue
        out += [text[at:start], shown]
        at = end
    return "".join([*out, text[at:]])
