"""Sessions as data (Strudel section 5): states that are steps, transitions with
probabilities and think times. Workload-independent: a workload names its steps and
writes them as async functions of a per-session context.

A definition, as in a settings file (YAML here; TOML tables work the same):

    BrowseFriends:
      start: home                  # optional: the first state by default
      end: logout                  # optional: another name that ends the session
      states:
        home: {step: "VP(self)", next: "LF(self)"}      # one transition, p = 1
        "LF(self)":                                     # no step: the state's name is it
          next: {"VP(friend)": 0.8, end: 0.2}
        "VP(friend)":
          next:
            "LF(self)": {p: 0.5, think: 2000}           # ms before LF(self) is played
            logout: 0.5

- `states` maps a state's name to its `step` (default: the name itself) and `next`, its
  transitions: a state's name alone (p = 1), or a table of state name to a probability or
  to `{p, think}`. `think` is in ms; without it the player's default think time applies
  (a workload's `thinktime`). A state without transitions ends the session after its
  step. "end", and the `end` name if one is given, are not states: moving to them ends
  the session.
- The probabilities of a state's transitions add up to 1 (within 1e-9); every state is
  reachable from the start and has a way to the end.

Playing: the start state's step runs; a truthy result goes on, a falsy one (the action
failed) or None (no valid target) ends the session. The next state is drawn (one
`rng.random()` only when a state has several transitions), the player thinks, and the
next step runs; a think returning False (the experiment is stopping) ends the session.
The cleanup hook runs however the session ended.

API: `SessionDef` (the pydantic model above); `check_session(name, definition, steps)`
(one-line ValueError naming the session and the state); `Machine(name, definition,
steps, cleanup=None, default_think_ms=None)` compiles a definition over `steps` (step
name -> async function of the context); `await machine.play(context, rng, think)`.
"""

from bisect import bisect_right
from collections.abc import Awaitable, Callable, Collection, Mapping
from random import Random
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

END = "end"
TOLERANCE = 1e-9
MAX_THINK_MS = 86_400_000  # one day, as the workload's own think time

C = TypeVar("C")
Step = Callable[[C], Awaitable[object]]
# Sleeps for the given seconds (None: the player's default think time); False when the
# experiment is stopping.
Think = Callable[[float | None], Awaitable[bool]]

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)


class Transition(BaseModel):
    model_config = _STRICT

    p: Annotated[float, Field(ge=0, le=1, description="probability of this transition")] = 1.0
    think: Annotated[
        float | None,
        Field(ge=0, le=MAX_THINK_MS, description="ms before the next step (default: thinktime)"),
    ] = None


class State(BaseModel):
    model_config = _STRICT

    step: str | None = Field(None, description="the step this state plays (default: its name)")
    next: dict[str, Transition] = Field(
        default_factory=dict, description="state name -> probability or {p, think}"
    )

    @field_validator("next", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        """`next: B` is `{B: 1}`; `{B: 0.3}` is `{B: {p: 0.3}}`."""
        if isinstance(value, str):
            return {value: {}}
        if isinstance(value, dict):
            return {
                target: {"p": t} if isinstance(t, int | float) and not isinstance(t, bool) else t
                for target, t in value.items()
            }
        return value


class SessionDef(BaseModel):
    model_config = _STRICT

    states: dict[str, State] = Field(min_length=1)
    start: str | None = Field(None, description="the first state (default: the first listed)")
    end: str | None = Field(None, description="a name that, as 'end', ends the session")

    def step_of(self, state: str) -> str:
        step = self.states[state].step
        return state if step is None else step

    @property
    def start_state(self) -> str:
        return self.start if self.start is not None else next(iter(self.states))

    @property
    def ends(self) -> frozenset[str]:
        return frozenset((END,) if self.end is None else (END, self.end))


def check_session(name: str, definition: SessionDef, steps: Collection[str]) -> None:
    """Raise ValueError, one line naming the session and the state, if `definition` is not
    a playable session over `steps`."""
    where = f"session {name!r}"
    states, ends = definition.states, definition.ends
    clash = sorted(ends & states.keys())
    if clash:
        raise ValueError(
            f"{where}: state {clash[0]!r} is the name of the end (a transition to it ends "
            "the session): rename the state"
        )
    if definition.start is not None and definition.start not in states:
        raise ValueError(
            f"{where}: start state {definition.start!r} is not one of its states: use one of "
            f"{', '.join(states)}"
        )
    for state in states:
        _check_state(f"{where}, state {state!r}", definition, state, steps)
    _check_paths(where, definition)


def _check_state(at: str, definition: SessionDef, state: str, steps: Collection[str]) -> None:
    """One state's step and transitions."""
    states, ends, body = definition.states, definition.ends, definition.states[state]
    step = definition.step_of(state)
    if step not in steps:
        raise ValueError(f"{at}: unknown step {step!r}: use one of {', '.join(steps)}")
    for target in body.next:
        if target not in states and target not in ends:
            raise ValueError(
                f"{at}: transition to unknown state {target!r}: define that state, or "
                f"use {END!r} to end the session"
            )
    total = sum(t.p for t in body.next.values())
    if body.next and abs(total - 1.0) > TOLERANCE:
        raise ValueError(
            f"{at}: the probabilities of its transitions add up to {total:.12g}, not 1: "
            "make them sum to 1"
        )


def _check_paths(where: str, definition: SessionDef) -> None:
    """Every state reachable from the start, and the end reachable from every state."""
    states, ends = definition.states, definition.ends
    edges = {s: [t for t, tr in body.next.items() if tr.p > 0] for s, body in states.items()}
    start = definition.start_state
    seen = _closure([start], edges)
    for state in states:
        if state not in seen:
            raise ValueError(
                f"{where}, state {state!r}: unreachable from the start state {start!r}: add a "
                "transition to it (with p > 0) or remove it"
            )
    back: dict[str, list[str]] = {s: [] for s in [*states, *ends]}
    for s, targets in edges.items():
        for t in targets:
            back[t].append(s)
    ending = _closure([*ends, *(s for s, targets in edges.items() if not targets)], back)
    for state in states:
        if state not in ending:
            raise ValueError(
                f"{where}, state {state!r}: no path from it leads to the end: add a "
                f"transition to {END!r} on the way"
            )


def _closure(roots: list[str], edges: Mapping[str, list[str]]) -> set[str]:
    seen, todo = set(roots), list(roots)
    while todo:
        for t in edges.get(todo.pop(), ()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


_MANY = -2  # `only` of a state with several transitions


class _Compiled(Generic[C]):
    """One state, ready to play: indexes instead of names, -1 for the end; `only` and
    `pause` are the target and think time of a state with one transition."""

    __slots__ = ("cumulative", "only", "pause", "step", "targets", "thinks")

    def __init__(
        self,
        step: Step[C],
        targets: tuple[int, ...],
        cumulative: tuple[float, ...],
        thinks: tuple[float | None, ...],
    ) -> None:
        self.step = step
        self.targets = targets
        self.cumulative = cumulative
        self.thinks = thinks
        self.only = targets[0] if len(targets) == 1 else _MANY
        self.pause = thinks[0]


class Machine(Generic[C]):
    """A compiled session: `await machine.play(context, rng, think)` plays it once."""

    __slots__ = ("_cleanup", "_start", "_states", "name")

    def __init__(
        self,
        name: str,
        definition: SessionDef,
        steps: Mapping[str, Step[C]],
        cleanup: Callable[[C], None] | None = None,
        default_think_ms: float | None = None,
    ) -> None:
        check_session(name, definition, steps.keys())
        self.name = name
        index = {state: i for i, state in enumerate(definition.states)}
        index.update(dict.fromkeys(definition.ends, -1))
        compiled: list[_Compiled[C]] = []
        for state, body in definition.states.items():
            moves = [(t, tr) for t, tr in body.next.items() if tr.p > 0] or [(END, Transition())]
            cumulative, running = [], 0.0
            for _, tr in moves:
                running += tr.p
                cumulative.append(running)
            cumulative[-1] = 1.0  # rng.random() < 1 always lands on a transition
            thinks = tuple(
                _seconds(default_think_ms if tr.think is None else tr.think) for _, tr in moves
            )
            targets = tuple(index[t] for t, _ in moves)
            compiled.append(
                _Compiled(steps[definition.step_of(state)], targets, tuple(cumulative), thinks)
            )
        self._states = tuple(compiled)
        self._start = index[definition.start_state]
        self._cleanup = cleanup

    async def play(self, context: C, rng: Random, think: Think) -> None:
        states = self._states
        state = states[self._start]
        try:
            while await state.step(context):
                nxt, pause = state.only, state.pause
                if nxt == _MANY:  # most states have one transition: no draw
                    i = bisect_right(state.cumulative, rng.random())
                    nxt, pause = state.targets[i], state.thinks[i]
                if nxt < 0 or not await think(pause):
                    return
                state = states[nxt]
        finally:
            if self._cleanup is not None:
                self._cleanup(context)


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0
