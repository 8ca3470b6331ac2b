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
- `on` maps an outcome label to transitions written as `next` is: a step whose result is
  that label (a non-empty str, Strudel's "lost the bid", "sold out") moves by `on[label]`;
  any other truthy result, or a label the state has no `on` for, moves by `next`:

      "STORE_BID":
        next: {"VIEW_AUCTION_ITEM": 0.7, HOME: 0.3}     # the bid won
        on:
          lost: {"VIEW_AUCTION_ITEM": 0.5, HOME: 0.5}   # outbid: look again, or give up
- The probabilities of a state's transitions (of `next`, and of each label's) add up to 1
  (within 1e-9); every state is reachable from the start (through `next` or `on`) and has
  a way to the end.

Playing: the start state's step runs; a truthy result goes on, a falsy one (the action
failed) or None (no valid target) ends the session. The next state is drawn (one
`rng.random()` only when a state has several transitions; an outcome label picks whose),
the player thinks, and the next step runs; a think returning False (the experiment is
stopping) ends the session. The cleanup hook runs however the session ended.

API: `SessionDef` (the pydantic model above); `check_session(name, definition, steps)`
(one-line ValueError naming the session and the state); `Machine(name, definition,
steps, cleanup=None, default_think_ms=None)` compiles a definition over `steps` (step
name -> async function of the context); `await machine.play(context, rng, think)`. Steps
share what they learn through the context (Strudel's complete(): the item a listing
chose becomes the next step's target). A definition without `on` plays as it did before
outcomes existed: the label lookup is in a second loop only such definitions use.
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


def _transitions(value: Any) -> Any:
    """`B` is `{B: 1}`; `{B: 0.3}` is `{B: {p: 0.3}}`."""
    if isinstance(value, str):
        return {value: {}}
    if isinstance(value, dict):
        return {
            target: {"p": t} if isinstance(t, int | float) and not isinstance(t, bool) else t
            for target, t in value.items()
        }
    return value


class State(BaseModel):
    model_config = _STRICT

    step: str | None = Field(None, description="the step this state plays (default: its name)")
    next: dict[str, Transition] = Field(
        default_factory=dict, description="state name -> probability or {p, think}"
    )
    on: dict[str, dict[str, Transition]] = Field(
        default_factory=dict,
        description="outcome label of the step -> transitions (as next) taken on that label",
    )

    @field_validator("next", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return _transitions(value)

    @field_validator("on", mode="before")
    @classmethod
    def _label_shorthand(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {label: _transitions(t) for label, t in value.items()}
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
    _check_moves(at, "", body.next, states, ends)
    for label, moves in body.on.items():
        if not label:
            raise ValueError(f"{at}: an empty outcome label in `on`: name the outcome")
        if not moves:
            raise ValueError(
                f"{at}: outcome {label!r} has no transitions: give it some, or remove it"
            )
        _check_moves(at, f" on {label!r}", moves, states, ends)


def _check_moves(
    at: str,
    which: str,
    moves: Mapping[str, Transition],
    states: Collection[str],
    ends: Collection[str],
) -> None:
    for target in moves:
        if target not in states and target not in ends:
            raise ValueError(
                f"{at}: transition{which} to unknown state {target!r}: define that state, "
                f"or use {END!r} to end the session"
            )
    total = sum(t.p for t in moves.values())
    if moves and abs(total - 1.0) > TOLERANCE:
        raise ValueError(
            f"{at}: the probabilities of its transitions{which} add up to {total:.12g}, "
            "not 1: make them sum to 1"
        )


def _check_paths(where: str, definition: SessionDef) -> None:
    """Every state reachable from the start, and the end reachable from every state."""
    states, ends = definition.states, definition.ends
    edges = {
        s: [t for moves in (body.next, *body.on.values()) for t, tr in moves.items() if tr.p > 0]
        for s, body in states.items()
    }
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
    # A state without `next` ends the session after a step that gave no label of its `on`.
    final = (s for s, body in states.items() if not any(t.p > 0 for t in body.next.values()))
    ending = _closure([*ends, *final], back)
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


class _Moves:
    """Where a state goes: indexes instead of names, -1 for the end; `only` and `pause`
    are the target and think time when there is one transition."""

    __slots__ = ("cumulative", "only", "pause", "targets", "thinks")

    def __init__(
        self,
        moves: Mapping[str, Transition],
        index: Mapping[str, int],
        default_think_ms: float | None,
    ) -> None:
        taken = [(t, tr) for t, tr in moves.items() if tr.p > 0] or [(END, Transition())]
        cumulative, running = [], 0.0
        for _, tr in taken:
            running += tr.p
            cumulative.append(running)
        cumulative[-1] = 1.0  # rng.random() < 1 always lands on a transition
        self.cumulative = tuple(cumulative)
        self.thinks = tuple(
            _seconds(default_think_ms if tr.think is None else tr.think) for _, tr in taken
        )
        self.targets = tuple(index[t] for t, _ in taken)
        self.only = self.targets[0] if len(self.targets) == 1 else _MANY
        self.pause = self.thinks[0]


class _Compiled(Generic[C]):
    """One state, ready to play: its step, its `next` moves (flattened into the state, the
    hot path), and its moves per outcome label (empty without `on`)."""

    __slots__ = ("cumulative", "only", "outcomes", "pause", "step", "targets", "thinks")

    def __init__(self, step: Step[C], moves: _Moves, outcomes: dict[str, _Moves]) -> None:
        self.step = step
        self.targets = moves.targets
        self.cumulative = moves.cumulative
        self.thinks = moves.thinks
        self.only = moves.only
        self.pause = moves.pause
        self.outcomes = outcomes


class Machine(Generic[C]):
    """A compiled session: `await machine.play(context, rng, think)` plays it once."""

    __slots__ = ("_cleanup", "_start", "_states", "_steered", "name")

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
        self._states = tuple(
            _Compiled(
                steps[definition.step_of(state)],
                _Moves(body.next, index, default_think_ms),
                {label: _Moves(moves, index, default_think_ms) for label, moves in body.on.items()},
            )
            for state, body in definition.states.items()
        )
        self._start = index[definition.start_state]
        self._cleanup = cleanup
        self._steered = any(body.on for body in definition.states.values())

    async def play(self, context: C, rng: Random, think: Think) -> None:
        if self._steered:
            return await self._play_steered(context, rng, think)
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

    async def _play_steered(self, context: C, rng: Random, think: Think) -> None:
        """As play, where a step's outcome label picks the moves of its `on`."""
        states = self._states
        state = states[self._start]
        try:
            while result := await state.step(context):
                moves: _Moves | _Compiled[C] = state
                if type(result) is str and state.outcomes:
                    moves = state.outcomes.get(result, state)
                nxt, pause = moves.only, moves.pause
                if nxt == _MANY:
                    i = bisect_right(moves.cumulative, rng.random())
                    nxt, pause = moves.targets[i], moves.thinks[i]
                if nxt < 0 or not await think(pause):
                    return
                state = states[nxt]
        finally:
            if self._cleanup is not None:
                self._cleanup(context)


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000.0
