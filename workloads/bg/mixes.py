"""Mixes of actions and sessions: the three of the paper's Table 3 by name, or custom ones.

A mix maps a unit (an action code such as "VP", a session name such as
"ViewSelfProfileSession", or the name of a session defined in the settings'
`bg.workload.sessions`) to a weight; weights are normalised to probabilities.
"""

from collections.abc import Collection, Mapping

from bgbench.workloads.bg.actions import Action
from bgbench.workloads.bg.session_defs import BUILTIN_SESSIONS

SESSION_NAMES = tuple(BUILTIN_SESSIONS)

ACTION_CODES = tuple(a.name for a in Action)

# Paper Table 3, in percent.
NAMED_MIXES: dict[str, dict[str, float]] = {
    "verylow": {
        "VP": 40,
        "LF": 5,
        "VFR": 5,
        "IF": 0.02,
        "AFR": 0.02,
        "RFR": 0.03,
        "TF": 0.03,
        "VTR": 49.9,
    },
    "low": {"VP": 40, "LF": 5, "VFR": 5, "IF": 0.2, "AFR": 0.2, "RFR": 0.3, "TF": 0.3, "VTR": 49},
    "high": {"VP": 35, "LF": 5, "VFR": 5, "IF": 2, "AFR": 2, "RFR": 3, "TF": 3, "VTR": 45},
    # Every session equally likely: exercises all 11 actions, comments included.
    "sessions": {name: 1 for name in SESSION_NAMES},
}
MIX_ALIASES = {"0.1%": "verylow", "1%": "low", "10%": "high"}


def resolve_mix(mix: str | Mapping[str, float], sessions: Collection[str] = ()) -> dict[str, float]:
    """Return the mix as normalised probabilities; raise ValueError naming what is wrong.
    `sessions` are the names of the user's sessions, which the mix may weight too."""
    if isinstance(mix, str):
        name = MIX_ALIASES.get(mix, mix)
        if name in ACTION_CODES or name in SESSION_NAMES or name in sessions:
            return {name: 1.0}  # one action or one session alone
        if name not in NAMED_MIXES:
            known = ", ".join(sorted(NAMED_MIXES))
            raise ValueError(
                f"unknown mix {mix!r}: use one of {known}, an action code, a session name "
                "or a table of weights"
            )
        weights = NAMED_MIXES[name]
    else:
        weights = dict(mix)
    for unit, weight in weights.items():
        if unit not in ACTION_CODES and unit not in SESSION_NAMES and unit not in sessions:
            raise ValueError(
                f"unknown mix entry {unit!r}: use an action code ({', '.join(ACTION_CODES)}), "
                "a session name or a session defined in bg.workload.sessions"
            )
        if not weight >= 0:
            raise ValueError(f"mix weight of {unit} must be >= 0, got {weight}")
    total = sum(weights.values())
    if total <= 0:
        raise ValueError("mix weights must add up to more than 0")
    return {unit: w / total for unit, w in weights.items() if w > 0}
