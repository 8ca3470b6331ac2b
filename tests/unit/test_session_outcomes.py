"""Sessions driven by results: a step's outcome label picks the state's `on` transitions."""

import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bgbench.sdk import run_blocking
from bgbench.workloads.sessions import Machine, SessionDef, check_session


class Ctx:
    """Records the steps played; each step's results are queued per step name."""

    def __init__(self, **results: list[object]) -> None:
        self.played: list[str] = []
        self.results = {name: list(r) for name, r in results.items()}
        self.chosen: int | None = None


def step(name: str) -> Callable[[Ctx], Awaitable[object]]:
    async def run(c: Ctx) -> object:
        c.played.append(name)
        queued = c.results.get(name)
        return queued.pop(0) if queued else True

    return run


async def choose(c: Ctx) -> object:
    """A listing that picks the item the next step acts on (Strudel's complete())."""
    c.played.append("list")
    c.chosen = 7
    return True


async def bid(c: Ctx) -> object:
    c.played.append(f"bid({c.chosen})")
    queued = c.results.get("bid")
    return queued.pop(0) if queued else True


STEPS = {**{n: step(n) for n in ("home", "view", "buy")}, "list": choose, "bid": bid}


async def no_think(_: float | None) -> bool:
    return True


def play(data: dict[str, Any], ctx: Ctx, seed: int = 1) -> list[str]:
    machine = Machine("s", SessionDef.model_validate(data), STEPS)
    run_blocking(machine.play(ctx, random.Random(seed), no_think))
    return ctx.played


BIDDING = {
    "states": {
        "home": {"next": "list"},
        "list": {"next": "bid"},
        "bid": {"next": "view", "on": {"lost": "list", "closed": "end"}},
        "view": {},
    }
}


def test_a_label_picks_its_transitions_and_other_results_take_next() -> None:
    # lost twice (back to the listing each time), then won: on to view
    ctx = Ctx(bid=["lost", "lost", True])
    assert play(BIDDING, ctx) == [
        "home", "list", "bid(7)", "list", "bid(7)", "list", "bid(7)", "view"
    ]  # fmt: skip


def test_a_label_without_on_entry_takes_next_and_a_label_can_end() -> None:
    assert play(BIDDING, Ctx(bid=["won"])) == ["home", "list", "bid(7)", "view"]
    assert play(BIDDING, Ctx(bid=["closed"])) == ["home", "list", "bid(7)"]


def test_an_empty_label_is_falsy_and_ends_the_session() -> None:
    assert play(BIDDING, Ctx(bid=[""])) == ["home", "list", "bid(7)"]


def test_label_transitions_are_drawn_by_their_probabilities() -> None:
    data = {
        "states": {
            "home": {"next": "bid"},
            "bid": {"next": "view", "on": {"lost": {"buy": 0.5, "view": 0.5}}},
            "view": {},
            "buy": {},
        }
    }
    after = set()
    for seed in range(40):
        played = play(data, Ctx(bid=["lost"]), seed)
        after.add(played[-1])
    assert after == {"buy", "view"}


def test_a_state_reached_only_through_on_is_reachable() -> None:
    data = {
        "states": {
            "home": {"next": "bid"},
            "bid": {"on": {"sold_out": "buy"}},  # no next: ends unless sold out
            "buy": {},
        }
    }
    check_session("s", SessionDef.model_validate(data), STEPS)
    assert play(data, Ctx(bid=["sold_out"])) == ["home", "bid(None)", "buy"]
    assert play(data, Ctx()) == ["home", "bid(None)"]


@pytest.mark.parametrize(
    ("on", "message"),
    [
        ({"lost": "nowhere"}, "state 'bid': transition on 'lost' to unknown state 'nowhere'"),
        ({"lost": {"home": 0.5, "view": 0.2}}, "transitions on 'lost' add up to 0.7, not 1"),
        ({"lost": {}}, "outcome 'lost' has no transitions"),
        ({"": "home"}, "an empty outcome label"),
    ],
)
def test_bad_outcome_transitions_are_one_line_errors(on: dict[str, Any], message: str) -> None:
    data = {"states": {"home": {"next": "bid"}, "bid": {"next": "view", "on": on}, "view": {}}}
    with pytest.raises(ValueError, match="session 's'") as caught:
        check_session("s", SessionDef.model_validate(data), STEPS)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_state_only_an_on_edge_leaves_must_still_reach_the_end() -> None:
    data = {
        "states": {
            "home": {"next": "bid"},
            "bid": {"next": "end", "on": {"lost": "loop"}},
            "loop": {"step": "view", "next": "loop"},
        }
    }
    with pytest.raises(ValueError, match="state 'loop': no path from it leads to the end"):
        check_session("s", SessionDef.model_validate(data), STEPS)
