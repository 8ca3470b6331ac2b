"""Reading a settings or campaign file, and a `-p` value, as hostile input: within bounds.

A file is read only if it is a regular file of at most TEXT_LIMIT bytes (a FIFO would block
forever, /dev/zero would fill memory). A YAML document may not nest deeper than MAX_DEPTH
nor hold more than MAX_VALUES values once its aliases are expanded: aliases are shared
when composed, but every consumer (JSON, validation, a campaign's copies) expands them,
so eight levels of ten aliases (a "billion laughs") would be 10^8 values. An alias inside
the node it names (a recursive alias) is refused by name. TOML and `-p` values meet the
same bounds. Every refusal is one UserError line naming the file (and line, for YAML).
"""

import json
import sys
import tomllib
from pathlib import Path
from typing import Any, cast

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import CollectionNode, MappingNode, Node, SequenceNode

from bgbench.errors import UserError
from bgbench.inputs import read_bounded_text

TEXT_LIMIT = 16 * 1024 * 1024  # bytes of a settings or campaign file
MAX_DEPTH = 64  # nesting of mappings and lists
MAX_VALUES = 100_000  # values of one document, aliases expanded


def shown(value: object) -> str:
    """A key or value of a file as an error shows it: as written when printable, else its
    repr (a key holding a newline must not break the one line)."""
    text = str(value)
    return text if text.isprintable() else repr(text)


def read_text(path: Path, what: str = "config file") -> str:
    """A regular UTF-8 file's text, at most TEXT_LIMIT bytes; else a UserError naming it."""
    return read_bounded_text(path, TEXT_LIMIT, what)


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses a recursive alias, nesting past MAX_DEPTH and a document
    of more than MAX_VALUES values once its aliases are expanded (counted, never built)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}  # id(node) -> its expanded count, once complete

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, AliasEvent):
            target = self.anchors.get(event.anchor) if event.anchor is not None else None
            if target is not None and id(target) not in self._sizes:
                mark: Any = event.start_mark
                raise ComposerError(
                    None, None, f"alias *{event.anchor} is inside the node it names "
                    "(a recursive alias)", mark,
                )  # fmt: skip
            return super().compose_node(parent, index)
        nests = isinstance(event, (MappingStartEvent, SequenceStartEvent))
        self._depth += nests
        if self._depth > MAX_DEPTH:
            raise ComposerError(
                None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark
            )
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= nests
        if node is None:
            return None
        self._sizes[id(node)] = size = 1 + sum(self._sizes[id(c)] for c in _children(node))
        if size > MAX_VALUES:
            raise ComposerError(
                None, None, f"holds more than {MAX_VALUES:,} values once its aliases are "
                "expanded", cast(Any, node).start_mark,
            )  # fmt: skip
        return node


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    assert not isinstance(node, CollectionNode)
    return []


def value_problem(exc: ValueError | OverflowError | LookupError) -> str:
    """A parser's ValueError in words (Python's own names a function to raise the limit)."""
    if isinstance(exc, LookupError):
        return "a value its tag cannot read (empty or malformed)"
    if "integer string conversion" in str(exc):
        return f"a number of more than {sys.get_int_max_str_digits():,} digits"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _checked(construct: Any) -> Any:
    """A constructor whose ValueError (an integer past Python's digit limit, a date that
    does not exist) or lookup error (PyYAML indexes an empty `!!int`, `!!float` or `!!bool`
    scalar) is a YAML error at the node, not a crash."""

    def construct_checked(loader: yaml.SafeLoader, node: Node) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, OverflowError, LookupError) as exc:
            raise ConstructorError(None, None, value_problem(exc), node.start_mark) from None

    return construct_checked


def _not_a_setting(loader: yaml.SafeLoader, node: Node) -> Any:
    raise ConstructorError(
        None, None, f"{node.tag} values are not settings: use text, numbers, lists and "
        "mappings", node.start_mark,
    )  # fmt: skip


def _as_text(loader: yaml.SafeLoader, node: Node) -> Any:
    return loader.construct_scalar(node)  # type: ignore[arg-type]


for _tag, _construct in (
    ("int", yaml.SafeLoader.construct_yaml_int),
    ("float", yaml.SafeLoader.construct_yaml_float),
    ("bool", yaml.SafeLoader.construct_yaml_bool),
):
    BoundedLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _checked(_construct))
BoundedLoader.add_constructor("tag:yaml.org,2002:timestamp", _as_text)  # a date stays text
for _tag in ("binary", "set", "omap", "pairs"):  # not JSON: they would crash later
    BoundedLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _not_a_setting)


def yaml_problem(exc: yaml.YAMLError) -> str:
    """The first line of a YAML error and, when known, the line it points at."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    mark = getattr(exc, "problem_mark", None)
    line = f" at line {mark.line + 1}" if mark is not None else ""
    return f"{line}: {first}"


def load_yaml(text: str) -> Any:
    """The data of one YAML document, within the bounds."""
    return yaml.load(text, Loader=BoundedLoader)


def compose_yaml(text: str) -> Node | None:
    """The node graph of one YAML document (keys keep their lines), within the bounds."""
    return yaml.compose(text, Loader=BoundedLoader)


def check_shape(data: Any, where: str) -> None:
    """Refuse data nested deeper than MAX_DEPTH or holding more than MAX_VALUES values
    (TOML and JSON have no aliases: no sharing to account for)."""
    count = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise UserError(f"{where} holds more than {MAX_VALUES:,} values")
        if isinstance(value, dict):
            children: list[Any] = [*value.keys(), *value.values()]
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH and children:
            raise UserError(f"{where} is nested deeper than {MAX_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children)


def read_file(path: Path) -> dict[str, Any]:
    """The settings table of a TOML or YAML file (YAML by its suffix)."""
    text = read_text(path)
    try:
        if path.suffix in (".yaml", ".yml"):
            data = load_yaml(text) or {}
        else:
            data = tomllib.loads(text)
            check_shape(data, f"config file {path}")
    except yaml.YAMLError as exc:
        raise UserError(f"config file {path} is not valid YAML{yaml_problem(exc)}") from None
    except tomllib.TOMLDecodeError as exc:
        first = str(exc).splitlines()[0]
        raise UserError(f"config file {path} is not valid TOML: {first}") from None
    except RecursionError:  # tomllib recurses once per level of inline nesting
        raise UserError(f"config file {path} is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # tomllib: an integer past Python's digit limit
        raise UserError(f"config file {path} is not valid TOML: {value_problem(exc)}") from None
    if not isinstance(data, dict):
        raise UserError(f"config file {path} must hold a table of settings")
    return data


def parse_value(name: str, raw: str) -> Any:
    """A `-p NAME=VALUE` value: JSON when it parses, else the text itself."""
    name = shown(name)  # a name holding a newline must not break the one line
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    except RecursionError:
        raise UserError(f"parameter {name} is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise UserError(f"parameter {name}: {value_problem(exc)}") from None
    check_shape(value, f"parameter {name}")
    return value
