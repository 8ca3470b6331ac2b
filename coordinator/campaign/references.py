"""References `${path}` and expressions `${= expr}` of a campaign job, resolved within
bounds: a value that holds itself, or more than MAX_RESOLVED values and characters once
its references are expanded (a field of ten references to a field of ten references ...),
is refused as it is built, never expanded."""

import json
import re
from typing import Any

from bgbench.coordinator.campaign.document import Located, Path_, merge_data
from bgbench.coordinator.campaign.expressions import Circular, ExpressionError, Sizes, evaluate
from bgbench.coordinator.configuration.config import settings_model, workload_name
from bgbench.errors import UserError

REFERENCE = re.compile(r"\$\{([^}]*)\}")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
MAX_RESOLVED = 1_000_000  # values and characters of a job's document, references expanded


def compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


class Resolver:
    """Replaces every `${...}` of a job's document: a foreach value, another field of the
    document (the settings' default when the document leaves it unset), or an expression
    over them. A reference to a field that is itself still a reference waits for it;
    references in a circle are an error."""

    def __init__(self, merged: Located, values: dict[str, Any], context: str) -> None:
        self.merged = merged
        self.document = json.loads(json.dumps(merged.data))  # a deep copy of plain data
        self.values = values
        self.context = context
        self._defaults: dict[str, Any] | None = None
        self.field = ""  # the field being resolved, for errors
        self._sizes = Sizes(MAX_RESOLVED)  # of resolved values, which no longer change

    def resolve(self) -> dict[str, Any]:
        pending = [p for p, v in _leaves(self.document) if isinstance(v, str) and "${" in v]
        while pending:
            waiting = {".".join(p) for p in pending}
            progressed = []
            for path in pending:
                raw = _get(self.document, path)

                def blocked(ref: str, waiting: set[str] = waiting, path: Path_ = path) -> bool:
                    return any(
                        w == ref or w.startswith(ref + ".") or ref.startswith(w + ".")
                        for w in waiting - {".".join(path)}
                    )

                if any(blocked(r) for r in self._references(raw)):
                    continue
                self.field = ".".join(path) + ": "
                value = self.text(raw, self.merged.at(path))
                _set(self.document, path, value)  # then measured: it may now hold itself
                self._bound(value, self.merged.at(path), self._sizes)
                progressed.append(path)
            if not progressed:
                first = pending[0]
                raise UserError(
                    f"{self.merged.at(first)}: {self.context}: {'.'.join(first)} refers in a "
                    "circle (or to a field that refers back to it)"
                )
            pending = [p for p in pending if p not in progressed]
        self.field = ""
        self._bound(self.document, self.merged.at(()), Sizes(MAX_RESOLVED))
        return self.document  # type: ignore[no-any-return]

    def _bound(self, value: Any, where: str, sizes: Sizes) -> None:
        """Refuse a value that holds itself, or too much once its references are expanded."""
        place = f"{where}: " if where else ""
        try:
            size = sizes.of(value)
        except Circular as exc:
            raise UserError(f"{place}{self.context}: {self.field}{exc}") from None
        if size > MAX_RESOLVED:
            raise UserError(
                f"{place}{self.context}: {self.field}holds more than {MAX_RESOLVED:,} values "
                "and characters once its references are expanded"
            )

    def _references(self, raw: str) -> list[str]:
        refs = []
        for body in REFERENCE.findall(raw):
            text = body.strip()
            refs += DOTTED.findall(text[1:]) if text.startswith("=") else [text]
        return [r for r in refs if r.split(".")[0] not in self.values]

    def text(self, raw: str, where: str) -> Any:
        whole = REFERENCE.fullmatch(raw.strip())
        if whole:
            return self._value(whole.group(1), where)
        pieces, length, end = [], 0, 0
        for match in REFERENCE.finditer(raw):
            pieces += [raw[end : match.start()], compact(self._value(match.group(1), where))]
            end = match.end()
            length += len(pieces[-2]) + len(pieces[-1])
            if length > MAX_RESOLVED:
                raise UserError(
                    f"{where}: {self.context}: {self.field}its text would be longer than "
                    f"{MAX_RESOLVED:,} characters"
                )
        return "".join([*pieces, raw[end:]])

    def _value(self, body: str, where: str) -> Any:
        body = body.strip()
        if body.startswith("="):
            return self._expression(body[1:].strip(), where)
        return self._lookup(body, where)

    def _lookup(self, dotted: str, where: str) -> Any:
        parts = dotted.split(".")
        if parts[0] in self.values:
            node: Any = self.values[parts[0]]
            rest = parts[1:]
        else:
            node, rest = self._merged_with_defaults(), parts
        for part in rest:
            if not isinstance(node, dict) or part not in node:
                raise UserError(
                    f"{where}: {self.context}: {self.field}${{{dotted}}} names neither a "
                    "foreach value nor a setting"
                )
            node = node[part]
        return node

    def _expression(self, text: str, where: str) -> Any:
        names = {**self._merged_with_defaults(), **self.values}
        try:
            return evaluate(text, names)
        except ExpressionError as exc:
            shown = text if len(text) <= 80 else text[:77] + "..."
            raise UserError(f"{where}: {self.context}: {self.field}${{= {shown}}}: {exc}") from None

    def _merged_with_defaults(self) -> dict[str, Any]:
        if self._defaults is None:
            try:
                model = settings_model(workload_name(self.document))
                self._defaults = model().model_dump(mode="json")
            except UserError:
                self._defaults = {}
        return merge_data(self._defaults, self.document)


def _leaves(data: Any, path: Path_ = ()) -> list[tuple[Path_, Any]]:
    if isinstance(data, dict):
        return [x for k, v in data.items() for x in _leaves(v, (*path, str(k)))]
    if isinstance(data, list):
        return [x for i, v in enumerate(data) for x in _leaves(v, (*path, str(i)))]
    return [(path, data)]


def _get(data: Any, path: Path_) -> Any:
    for part in path:
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def _set(data: Any, path: Path_, value: Any) -> None:
    for part in path[:-1]:
        data = data[int(part)] if isinstance(data, list) else data[part]
    if isinstance(data, list):
        data[int(path[-1])] = value
    else:
        data[path[-1]] = value
