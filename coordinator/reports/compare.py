"""`bgbench compare`: ratings side by side (with what bound each), the settings that
differ, and for each pair whether their SoAR differ by more than the noise.

Two SoAR whose confidence intervals overlap are "within noise": the measurements cannot
tell them apart. Otherwise the higher is named with the difference. A rating without an
interval (the classic search, or too few samples) is compared on its number alone, and
the label says that no interval judged it.
"""

import itertools
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text

from bgbench.coordinator.storage.frames import ResultFrames
from bgbench.errors import UserError

WITHIN_NOISE = "within noise"


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested settings dict as {dotted path: leaf value} (lists are leaves)."""
    if not isinstance(value, dict):
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, inner in value.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(inner, dict) and inner:
            out.update(flatten(inner, path))
        else:
            out[path] = inner
    return out


def differing(configs: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """The settings whose values differ between the configs: one row per dotted path, one
    column per config's name (absent: None)."""
    flat = {name: flatten(c) for name, c in configs.items()}
    paths = sorted({p for f in flat.values() for p in f})
    rows = []
    for path in paths:
        values = [f.get(path) for f in flat.values()]
        if any(v != values[0] for v in values[1:]):
            rows.append({"setting": path, **{n: f.get(path) for n, f in flat.items()}})
    return pd.DataFrame(rows, columns=["setting", *configs], dtype=object)


@dataclass(frozen=True)
class Verdict:
    higher: str | None  # None: within noise
    difference: float  # higher - lower, actions/s
    percent: float  # of the lower
    label: str


def judge(a: "pd.Series[Any]", b: "pd.Series[Any]") -> Verdict:
    """Whether two ratings' SoAR differ beyond their intervals."""
    sa, sb = _num(a["soar"]), _num(b["soar"])
    if sa is None or sb is None:
        return Verdict(None, math.nan, math.nan, "no SoAR to compare")
    (hi, hs), (_, ls) = sorted([(a["id"], sa), (b["id"], sb)], key=lambda p: -p[1])
    diff = hs - ls
    percent = 100.0 * diff / ls if ls else math.inf
    intervals = [(_num(r["soar_low"]), _num(r["soar_high"])) for r in (a, b)]
    if all(low is not None and high is not None for low, high in intervals):
        (al, ah), (bl, bh) = intervals
        assert al is not None and ah is not None and bl is not None and bh is not None
        if al <= bh and bl <= ah:
            return Verdict(None, diff, percent, f"{WITHIN_NOISE} (intervals overlap)")
        return Verdict(hi, diff, percent, f"{hi} higher by {diff:,.1f} actions/s ({percent:.1f}%)")
    return Verdict(
        hi, diff, percent,
        f"{hi} higher by {diff:,.1f} actions/s ({percent:.1f}%); no interval to judge the noise",
    )  # fmt: skip


@dataclass(frozen=True)
class Comparison:
    ratings: pd.DataFrame  # one row per rating: id, store, workload, objective, soar, ...
    settings: pd.DataFrame  # the settings that differ (coordinator/compare.differing)
    pairs: pd.DataFrame  # a, b, verdict, higher, difference, percent


SUMMARY_COLUMNS = (
    "id", "status", "store", "workload", "objective", "store_description", "soar", "soar_low",
    "soar_high", "soar_threads", "confidence", "socialites", "socialites_low",
    "socialites_high", "bottleneck_kind", "bottleneck", "client_bound", "created",
    "transactions",
)  # fmt: skip


def compare(frames: ResultFrames, ids: list[str]) -> Comparison:
    if len(ids) < 2:
        raise UserError("compare needs two rating ids at least")
    if len(set(ids)) != len(ids):
        raise UserError("compare: a rating id is given twice")
    rows = [frames.rating(i) for i in ids]
    ratings = pd.DataFrame([{c: r[c] for c in SUMMARY_COLUMNS} for r in rows])
    settings = differing({r["id"]: r["config"] for r in rows})
    pairs = []
    for a, b in itertools.combinations(rows, 2):
        v = judge(a, b)
        pairs.append({"a": a["id"], "b": b["id"], "verdict": v.label, "higher": v.higher,
                      "difference": v.difference, "percent": v.percent})  # fmt: skip
    return Comparison(ratings, settings, pd.DataFrame(pairs))


def soar_text(r: "pd.Series[Any]") -> str:
    soar = _num(r["soar"])
    if soar is None:
        return "-"
    low, high = _num(r["soar_low"]), _num(r["soar_high"])
    if low is None or high is None:
        return f"{soar:,.1f}"
    return f"{soar:,.1f} (CI {low:,.1f}..{high:,.1f})"


def socialites_text(r: "pd.Series[Any]") -> str:
    s = _num(r["socialites"])
    if s is None:
        return "-"
    low, high = _num(r["socialites_low"]), _num(r["socialites_high"])
    if low is None or high is None or low == high == s:
        return f"{s:.0f}"
    return f"{s:.0f} (uncertain {low:.0f}..{high:.0f})"


def bottleneck_text(r: "pd.Series[Any]") -> str:
    """What bound the rating (its standing experiment), client-bound said loudly."""
    text = r["bottleneck"]
    if not isinstance(text, str) or not text:
        return "-"
    return f"CLIENT-BOUND: {text}" if said_true(r["client_bound"]) else text


def said_true(value: Any) -> bool:
    """A frame's flag that may be missing (None, NaN, NA) or numpy's bool."""
    return value is not None and not pd.isna(value) and bool(value)


def render(c: Comparison) -> Group:
    """The comparison as rich tables for the terminal."""
    side = Table(title="ratings side by side", title_justify="left")
    side.add_column("")
    for rid in c.ratings["id"]:
        side.add_column(str(rid))
    rows = [r for _, r in c.ratings.iterrows()]
    side.add_row("store", *(f"{r['store']} ({r['store_description']})" for r in rows))
    side.add_row("objective", *(str(r["objective"]) for r in rows))
    side.add_row("SoAR actions/s (CI)", *(soar_text(r) for r in rows))
    side.add_row("SoAR at T", *(_int_text(r["soar_threads"]) for r in rows))
    side.add_row("Socialites", *(socialites_text(r) for r in rows))
    side.add_row("bottleneck", *(bottleneck_text(r) for r in rows))
    for label, cells in transaction_rows(rows):
        side.add_row(label, *cells)
    for _, s in c.settings.iterrows():
        side.add_row(str(s["setting"]), *(_value_text(s[rid]) for rid in c.ratings["id"]))
    pairs = Table(title="SoAR, pair by pair", title_justify="left")
    for col in ("a", "b", "verdict"):
        pairs.add_column(col)
    for _, p in c.pairs.iterrows():
        pairs.add_row(str(p["a"]), str(p["b"]), str(p["verdict"]))
    note = Text(f"{len(c.settings)} settings differ (listed above)\n")
    return Group(side, note, pairs)


TRANSACTION_ROWS = (("commits", "commits"), ("retries_per_commit", "retries per commit"),
                    ("backoff_ms_per_commit", "back-off ms per commit"),
                    ("gave_up", "gave up"))  # fmt: skip


def transaction_rows(rows: list["pd.Series[Any]"]) -> list[tuple[str, list[str]]]:
    """Per interaction any of the ratings ran transactions in: a row of each figure of
    TRANSACTION_ROWS, one cell per rating (its final experiment's)."""
    recorded = [r["transactions"] if isinstance(r["transactions"], dict) else {} for r in rows]
    actions = list(dict.fromkeys(a for t in recorded for a in t))
    out = []
    for action in actions:
        for key, label in TRANSACTION_ROWS:
            cells = [_figure_text(t.get(action, {}).get(key)) for t in recorded]
            out.append((f"{action} {label}", cells))
    return out


def _figure_text(v: Any) -> str:
    n = _num(v)
    if n is None:
        return "-"
    return f"{n:,.0f}" if float(n).is_integer() and abs(n) >= 1 else f"{n:.3g}"


def _value_text(v: Any) -> str:
    unset = v is None or (isinstance(v, float) and math.isnan(v))  # absent from a config
    return "-" if unset else str(v)


def _int_text(v: Any) -> str:
    n = _num(v)
    return "-" if n is None else f"{n:.0f}"


def _num(v: Any) -> float | None:
    if isinstance(v, str | bool) or pd.isna(v):  # None, NaN and pandas' NA
        return None
    return float(v)
