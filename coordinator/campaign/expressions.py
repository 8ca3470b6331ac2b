"""`${= expr}` of a campaign: a small expression over settings and foreach values,
evaluated by simpleeval within bounds, as hostile input.

An expression is at most MAX_LENGTH characters and MAX_DEPTH levels deep before it is
evaluated (20,000 nested minus signs exhaust the parser's memory); no value it makes may
hold more than MAX_SIZE values and characters, nor an integer more than MAX_INT_BITS bits
(checked before a power or a product is computed). Attributes are fields of settings
sections only (no string methods, which could build a string of any length), and there
are no comprehensions or f-strings. Whatever goes wrong is an ExpressionError, one line.
"""

import ast
import operator
from typing import Any

from simpleeval import (
    DEFAULT_OPERATORS,
    AttributeDoesNotExist,
    EvalWithCompoundTypes,
    FeatureNotAvailable,
    InvalidExpression,
    NumberTooHigh,
)

MAX_LENGTH = 1_000  # characters of one expression
MAX_DEPTH = 32  # levels of its syntax tree
MAX_SIZE = 10_000  # values and characters of any value it makes
MAX_INT_BITS = 4_096
FUNCTIONS = {"min": min, "max": max, "round": round, "int": int, "float": float, "abs": abs,
             "len": len, "str": str}  # fmt: skip
PLAIN = (str, int, float, bool, type(None), list, tuple, dict)
# Not part of the language: each could build a value of any size before a bound is checked.
REMOVED = (ast.JoinedStr, ast.FormattedValue, ast.ListComp, ast.SetComp, ast.DictComp,
           ast.GeneratorExp)  # fmt: skip


class ExpressionError(Exception):
    """An expression that cannot be evaluated, in one line."""


class Circular(ValueError):
    """A value that contains itself."""


class Sizes:
    """How many values and characters plain data holds, a shared part counted at each use
    (every consumer, JSON first, expands it); memoized by identity, so data built by
    sharing (a list of a list of ...) is measured in time linear in what was built.
    Counting stops past `limit`. The data must not change once measured."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._known: dict[int, tuple[Any, int]] = {}  # id -> (the value, kept alive; size)
        self._open: set[int] = set()

    def of(self, value: Any) -> int:
        if isinstance(value, str):
            return max(1, len(value))
        if not isinstance(value, (list, tuple, dict, set, frozenset)):
            return 1
        known = self._known.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        if id(value) in self._open:
            raise Circular("it contains itself")
        self._open.add(id(value))
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        size = 1
        try:
            for item in items:
                size += self.of(item)
                if size > self.limit:
                    break
        finally:
            self._open.discard(id(value))
        self._known[id(value)] = (value, size)
        return size


def _bits(value: Any) -> int:
    return value.bit_length() if isinstance(value, int) else 0


def _power(base: Any, exponent: Any) -> Any:
    if isinstance(exponent, int) and exponent > 0 and _bits(base) * exponent > MAX_INT_BITS:
        raise NumberTooHigh(f"{base} ** {exponent} has more than {MAX_INT_BITS} bits")
    return operator.pow(base, exponent)


def _product(left: Any, right: Any) -> Any:
    if _bits(left) + _bits(right) > MAX_INT_BITS:
        raise NumberTooHigh(f"the product has more than {MAX_INT_BITS} bits")
    for seq, times in ((left, right), (right, left)):
        repeated = isinstance(seq, (str, list, tuple)) and isinstance(times, int)
        if repeated and len(seq) * times > MAX_SIZE:
            raise NumberTooHigh(f"repeating makes more than {MAX_SIZE:,} items")
    return operator.mul(left, right)


def _modulo(left: Any, right: Any) -> Any:
    if isinstance(left, str):  # printf-style formatting: "%099999999d" % 1
        raise FeatureNotAvailable("% formatting of text is not available: use str() and +")
    return operator.mod(left, right)


OPERATORS = {**DEFAULT_OPERATORS, ast.Pow: _power, ast.Mult: _product, ast.Mod: _modulo}


class _Evaluator(EvalWithCompoundTypes):  # type: ignore[misc]
    def __init__(self, names: dict[str, Any]) -> None:
        super().__init__(operators=OPERATORS, functions=FUNCTIONS, names=names)
        for kind in REMOVED:
            self.nodes.pop(kind, None)
        self._sizes = Sizes(MAX_SIZE)

    def _check_disallowed_items(self, item: Any) -> None:
        # simpleeval walks every value a node makes, shared parts once per use: bound it first
        if self._size(item) > MAX_SIZE:
            raise NumberTooHigh(f"a value of more than {MAX_SIZE:,} items or characters")
        super()._check_disallowed_items(item)

    def _size(self, value: Any) -> int:
        if isinstance(value, int) and _bits(value) > MAX_INT_BITS:
            raise NumberTooHigh(f"a number of more than {MAX_INT_BITS} bits")
        return self._sizes.of(value)

    def _eval_attribute(self, node: ast.Attribute) -> Any:
        section = self._eval(node.value)
        if isinstance(section, dict) and node.attr in section:
            return section[node.attr]
        if isinstance(section, dict):
            raise AttributeDoesNotExist(node.attr, self.expr)
        raise FeatureNotAvailable(f".{node.attr}: only settings sections have fields")


def _depth(tree: ast.AST) -> int:
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _plain(value: Any) -> None:
    """Refuse a result a settings document cannot hold (a set, bytes, a complex number)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if not isinstance(item, PLAIN):
            raise ExpressionError(f"its value is a {type(item).__name__}, not a setting")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def evaluate(text: str, names: dict[str, Any]) -> Any:
    """The value of expression `text` over `names`; an ExpressionError says why not."""
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"longer than {MAX_LENGTH:,} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ExpressionError(f"not an expression: {getattr(exc, 'msg', exc)}") from None
    if _depth(tree) > MAX_DEPTH:
        raise ExpressionError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        value = _Evaluator(names).eval(text, previously_parsed=tree.body)
    except (InvalidExpression, ArithmeticError, LookupError, TypeError, ValueError,
            AttributeError, RecursionError) as exc:  # fmt: skip
        raise ExpressionError(
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        ) from None
    _plain(value)
    return value
