"""A workload's mix given by name or by weights, resolved to unit -> probability."""

from collections.abc import Mapping, Sequence


def _listed(units: Sequence[str], last: str) -> str:
    return f"{', '.join(units[:-1])} {last} {units[-1]}" if len(units) > 1 else units[0]


def resolve_weights(
    mix: str | Mapping[str, float],
    units: Sequence[str],
    named: Mapping[str, Mapping[str, float]],
    example: str,
) -> dict[str, float]:
    """`mix` is a named mix, one unit alone, or weights over `units`; raise ValueError
    saying what is wrong (`example`: a table of weights to show)."""
    if isinstance(mix, str):
        if mix in units:
            return {mix: 1.0}
        if mix not in named:
            raise ValueError(
                f"unknown mix {mix!r}: use {', '.join([*named, *units])} or a table of "
                f"weights such as {example}"
            )
        weights = dict(named[mix])
    else:
        weights = dict(mix)
    for unit, weight in weights.items():
        if unit not in units:
            raise ValueError(f"unknown mix entry {unit!r}: weigh {_listed(units, 'and')}")
        if not weight >= 0:
            raise ValueError(f"mix weight of {unit} must be >= 0, got {weight}")
    total = sum(weights.values())
    if total <= 0:
        raise ValueError(f"mix weights sum to 0: give {_listed(units, 'or')} a positive weight")
    return {unit: w / total for unit, w in weights.items() if w > 0}
