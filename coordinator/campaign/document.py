"""A campaign file as data, with where each value came from (file and line).

YAML is composed into nodes (not constructed straight into dicts) so every key keeps its
line: a job that fails validation names the line that set the field, even through
inheritance across files.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bgbench.coordinator.configuration.settings_files import (
    BoundedLoader,
    compose_yaml,
    read_text,
    yaml_problem,
)
from bgbench.errors import UserError

Path_ = tuple[str, ...]  # a key path inside a document: ("rating", "max_threads")


@dataclass
class Located:
    """A mapping and the place each of its key paths was written."""

    data: dict[str, Any]
    where: dict[Path_, str] = field(default_factory=dict)

    def at(self, path: Path_) -> str:
        """Where the longest prefix of `path` was written ("" when nowhere)."""
        for n in range(len(path), 0, -1):
            if path[:n] in self.where:
                return self.where[path[:n]]
        return ""

    def sub(self, key: str) -> "Located":
        """The mapping under `key`, its places relative to it."""
        value = self.data.get(key)
        return self._under((key,), value if isinstance(value, dict) else {})

    def item(self, key: str, index: int) -> "Located":
        """The mapping at `index` of the list under `key`."""
        value = self.data[key][index]
        return self._under((key, str(index)), value if isinstance(value, dict) else {})

    def _under(self, prefix: Path_, data: dict[str, Any]) -> "Located":
        n = len(prefix)
        where = {p[n:]: w for p, w in self.where.items() if p[:n] == prefix and len(p) > n}
        return Located(data, where)


def read_yaml(path: Path) -> tuple[Located, str]:
    """The file's mapping with its places, and its text."""
    text = read_text(path, "campaign file")
    try:
        node = compose_yaml(text)
    except yaml.YAMLError as exc:
        raise UserError(f"campaign file {path} is not valid YAML{yaml_problem(exc)}") from None
    if node is None:
        raise UserError(f"campaign file {path} is empty: see examples/campaigns/")
    if not isinstance(node, yaml.MappingNode):
        raise UserError(f"campaign file {path} must hold a mapping (campaign:, jobs:, ...)")
    where: dict[Path_, str] = {}
    data = _value(node, (), path, where)
    return Located(data, where), text


def _value(node: yaml.Node, path: Path_, file: Path, where: dict[Path_, str]) -> Any:
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            where[(*path, key)] = f"{file}:{key_node.start_mark.line + 1}"
            out[key] = _value(value_node, (*path, key), file, where)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            where[(*path, str(i))] = f"{file}:{item.start_mark.line + 1}"
            items.append(_value(item, (*path, str(i)), file, where))
        return items
    try:
        return BoundedLoader("").construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        raise UserError(f"campaign file {file} is not valid YAML{yaml_problem(exc)}") from None


def merge_data(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on `base`: mappings merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_data(out[key], value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class ServerSpec:
    """A server the campaign starts for a job through deploy/local/servers.py: one per job
    when `fresh`, else one shared by every job naming the same `name` (its kind by
    default) until the campaign ends."""

    kind: str
    fresh: bool = False
    name: str = ""

    @property
    def key(self) -> str:
        return self.name or self.kind

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "fresh": self.fresh, "name": self.name}
