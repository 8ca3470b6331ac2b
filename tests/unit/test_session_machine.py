"""Sessions as state machines: validation, the interpreter, BG's steps, settings files."""

import random
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import pytest
from pydantic import ValidationError

from bgbench.coordinator.configuration.config import load_settings
from bgbench.errors import UserError
from bgbench.sdk import UnitContext, blocking, run_blocking
from bgbench.validation.logformat import LogWriter
from bgbench.worker.measurement import Recorder
from bgbench.workloads.bg.actions import Action
from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.config import BGConfig, BGDatabaseConfig, BGWorkloadConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.bg.mixes import resolve_mix
from bgbench.workloads.bg.session_defs import BUILTIN_SESSIONS, STEP_NAMES
from bgbench.workloads.bg.sessions import STEPS, UNITS, Actor, unit_table
from bgbench.workloads.bg.store import AsyncBGConnection
from bgbench.workloads.bg.stores.null import NullBinding, NullConnection, NullOptions
from bgbench.workloads.bg.timed import TimedConnection
from bgbench.workloads.sessions import Machine, SessionDef, check_session

# -- a workload-free vocabulary for the interpreter ---------------------------------------


class Ctx:
    """Records the steps played; a step's result comes from `results` (default True)."""

    def __init__(self, **results: object) -> None:
        self.played: list[str] = []
        self.results = results
        self.value: int | None = None
        self.cleaned = 0


def step(name: str) -> Callable[[Ctx], Awaitable[object]]:
    async def run(c: Ctx) -> object:
        c.played.append(name)
        return c.results.get(name, True)

    return run


STEPS_ABC = {name: step(name) for name in ("a", "b", "c")}


class Thinker:
    """A think coroutine that records what it was asked; False from the `stop_at`-th call."""

    def __init__(self, stop_at: int = 0) -> None:
        self.asked: list[float | None] = []
        self.stop_at = stop_at

    async def __call__(self, seconds: float | None) -> bool:
        self.asked.append(seconds)
        return not self.stop_at or len(self.asked) < self.stop_at


class NoDraw(random.Random):
    def random(self) -> float:
        raise AssertionError("a state with one transition drew a random number")


def definition(data: dict[str, Any]) -> SessionDef:
    return SessionDef.model_validate(data)


def run(coro: Any) -> Any:
    return run_blocking(coro)  # the steps above never suspend


def play(
    data: dict[str, Any],
    ctx: Ctx | None = None,
    rng: random.Random | None = None,
    think: Thinker | None = None,
    **kw: Any,
) -> tuple[Ctx, Thinker]:
    ctx = ctx if ctx is not None else Ctx()
    think = think if think is not None else Thinker()
    machine = Machine("S", definition(data), STEPS_ABC, **kw)
    run(machine.play(ctx, rng if rng is not None else NoDraw(), think))
    return ctx, think


# -- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "needles"),
    [
        (
            {"states": {"a": {"next": {"b": 0.5, "end": 0.4}}, "b": {}}},
            ["state 'a'", "add up to 0.9, not 1"],
        ),
        (
            {"states": {"a": {"next": {"b": 0.5, "end": 0.5 + 1e-8}}, "b": {}}},
            ["state 'a'", "not 1"],
        ),
        ({"states": {"a": {}, "b": {}}}, ["state 'b'", "unreachable from the start state 'a'"]),
        (
            {"states": {"a": {"next": {"b": 1, "c": 0}}, "b": {}, "c": {}}},
            ["state 'c'", "unreachable"],
        ),
        ({"states": {"a": {"step": "zz"}}}, ["state 'a'", "unknown step 'zz'", "use one of a, b"]),
        ({"states": {"x": {}}}, ["state 'x'", "unknown step 'x'"]),
        ({"states": {"a": {"next": "q"}}}, ["state 'a'", "unknown state 'q'", "'end'"]),
        ({"states": {"a": {}}, "start": "q"}, ["start state 'q'", "use one of a"]),
        ({"states": {"a": {"next": "end"}, "end": {"step": "b"}}}, ["state 'end'", "rename"]),
        ({"states": {"a": {"next": "out"}, "out": {"step": "b"}}, "end": "out"}, ["'out'"]),
        (
            {"states": {"a": {"next": "b"}, "b": {"next": "a"}}},
            ["state 'a'", "no path from it leads to the end"],
        ),
    ],
)
def test_an_invalid_session_is_one_line_naming_it(data: dict[str, Any], needles: list[str]) -> None:
    with pytest.raises(ValueError) as caught:
        check_session("S", definition(data), STEPS_ABC.keys())
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("session 'S'")
    for needle in needles:
        assert needle in message


def test_probabilities_within_1e_9_of_1_are_valid() -> None:
    data = {"states": {"a": {"next": {"end": 0.7, "c": 0.2, "b": 0.1}}, "b": {}, "c": {}}}
    assert 0.7 + 0.2 + 0.1 != 1.0  # float sums are not exact
    check_session("S", definition(data), STEPS_ABC.keys())
    data = {"states": {"a": {"next": {"b": 0.5, "end": 0.5 + 5e-10}}, "b": {}}}
    check_session("S", definition(data), STEPS_ABC.keys())


def test_shapes_are_checked_by_the_model() -> None:
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        definition({"states": {"a": {"next": {"b": -0.5}}}})
    with pytest.raises(ValidationError, match="Extra inputs"):
        definition({"states": {"a": {"nxt": "b"}}})
    with pytest.raises(ValidationError, match="at least 1"):
        definition({"states": {}})


# -- the interpreter ----------------------------------------------------------------------


def test_a_chain_plays_every_step_in_order_without_drawing() -> None:
    ctx, think = play({"states": {"a": {"next": "b"}, "b": {"next": "c"}, "c": {}}})
    assert ctx.played == ["a", "b", "c"]
    assert think.asked == [None, None]  # between steps only; None: the default think time


def test_probabilities_choose_the_next_state_with_one_draw_each() -> None:
    data = {
        "states": {
            "a": {"next": {"b": 0.25, "c": 0.75}},
            "b": {"next": {"a": 0.5, "end": 0.5}},
            "c": {"next": {"a": 0.5, "end": 0.5}},
        }
    }
    machine = Machine("S", definition(data), STEPS_ABC)
    rng, twin = random.Random(7), random.Random(7)
    counts = {"b": 0, "c": 0}
    for _ in range(2000):
        ctx = Ctx()
        run(machine.play(ctx, rng, Thinker()))
        expected, state = ["a"], "a"
        while True:  # the same walk, from the same draws
            r = twin.random()
            if state == "a":
                state = "b" if r < 0.25 else "c"
            elif r < 0.5:
                state = "a"
            else:
                break
            expected.append(state)
        assert ctx.played == expected
        for s in ctx.played:
            if s in counts:
                counts[s] += 1
    share = counts["b"] / (counts["b"] + counts["c"])
    assert 0.2 < share < 0.3


def test_each_transition_has_its_think_time() -> None:
    data = {
        "states": {
            "a": {"next": {"b": {"think": 250}}},
            "b": {"next": {"c": {"p": 1, "think": 0}}},
            "c": {"next": {"end": {"think": 9000}}},
        }
    }
    ctx, think = play(data)
    assert ctx.played == ["a", "b", "c"]
    assert think.asked == [0.25, 0.0]  # no think before the end
    _, think = play({"states": {"a": {"next": "b"}, "b": {}}}, default_think_ms=40)
    assert think.asked == [0.04]


def test_the_start_and_end_states() -> None:
    data = {
        "start": "b",
        "end": "logout",
        "states": {"a": {"next": "logout"}, "b": {"next": "c"}, "c": {"next": "a"}},
    }
    ctx, think = play(data)
    assert ctx.played == ["b", "c", "a"]
    assert len(think.asked) == 2


def test_a_failed_step_or_no_target_ends_the_session() -> None:
    chain = {"states": {"a": {"next": "b"}, "b": {"next": "c"}, "c": {}}}
    for result in (False, None, 0):
        ctx, think = play(chain, ctx=Ctx(b=result))
        assert ctx.played == ["a", "b"]
        assert len(think.asked) == 1  # no think after the failed step


def test_a_stopping_experiment_ends_the_session() -> None:
    chain = {"states": {"a": {"next": "b"}, "b": {"next": "c"}, "c": {}}}
    ctx, think = play(chain, think=Thinker(stop_at=2))
    assert ctx.played == ["a", "b"] and len(think.asked) == 2


def test_steps_share_the_context_and_the_cleanup_runs_at_every_end() -> None:
    async def put(c: Ctx) -> bool:
        c.value = 42
        return True

    async def get(c: Ctx) -> bool:
        c.played.append(f"got {c.value}")
        return True

    async def boom(c: Ctx) -> bool:
        raise RuntimeError("a step failed badly")

    def cleanup(c: Ctx) -> None:
        c.cleaned += 1

    steps = {"put": put, "get": get, "boom": boom}
    d = definition({"states": {"put": {"next": "get"}, "get": {}}})
    ctx = Ctx()
    run(Machine("S", d, steps, cleanup=cleanup).play(ctx, NoDraw(), Thinker()))
    assert ctx.played == ["got 42"] and ctx.cleaned == 1
    ctx = Ctx()
    run(Machine("S", d, steps, cleanup=cleanup).play(ctx, NoDraw(), Thinker(stop_at=1)))
    assert ctx.played == [] and ctx.cleaned == 1
    d = definition({"states": {"put": {"next": "boom"}, "boom": {}}})
    ctx = Ctx()
    with pytest.raises(RuntimeError):
        run(Machine("S", d, steps, cleanup=cleanup).play(ctx, NoDraw(), Thinker()))
    assert ctx.cleaned == 1


def test_compiling_checks_the_definition() -> None:
    with pytest.raises(ValueError, match="session 'S', state 'a': unknown step 'q'"):
        Machine("S", definition({"states": {"a": {"step": "q"}}}), STEPS_ABC)


# -- BG's steps and sessions --------------------------------------------------------------


class FlakyNull:
    """The null store's connection: records every call, fails the calls named in `fail`."""

    def __init__(self, conn: NullConnection) -> None:
        self._conn = conn
        self.fail: set[str] = set()
        self.calls: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._conn, name)

        def call(*args: Any) -> Any:
            self.calls.append((name, *args))
            if name in self.fail:
                raise RuntimeError(f"{name} failed")
            return method(*args)

        return call


class BG:
    """One BG actor over the null store, its think times recorded."""

    def __init__(self, think_ms: float = 40, workload: BGWorkloadConfig | None = None) -> None:
        db = BGDatabaseConfig(
            usercount=300, friendcountperuser=10, resourcecountperuser=3,
            commentcountperresource=2, attrcount=1, attrlength=8,
        )  # fmt: skip
        self.fragment = Fragment(db, FragmentPlan((1.0,), 0.27), 0)
        binding = NullBinding(NullOptions())
        binding.load_fragment(self.fragment)
        self.state = FragmentState(self.fragment)
        self.conn = FlakyNull(binding.connect())
        self.tmp = tempfile.TemporaryDirectory()
        self.recorder = Recorder(LogWriter(Path(self.tmp.name) / "t.bglog"))
        self.think = Thinker()
        members = self.fragment.members.tolist()
        rng = random.Random(1)
        self.table = unit_table(workload or BGWorkloadConfig())
        timed = TimedConnection(blocking(self.conn, AsyncBGConnection), self.recorder, 0)
        self.actor = Actor(
            timed, self.state, lambda: rng.choice(members), rng, think_ms, 5,
            self.fragment.comment_text, self.table,
        )  # fmt: skip
        self.ctx = UnitContext(timed, rng, self.think)

    def play(self, unit: str, a: int) -> list[str]:
        """The actions the unit performed ("!" marks a failed one)."""
        before = len(self.recorder.acts)
        self.ctx.sid, self.ctx.intended = 1, 0
        run_blocking(self.actor.play(unit, self.ctx, a))
        acts = self.recorder.acts[before:]
        return [
            Action(code).name + "!" * status
            for code, status in zip(acts[::7], acts[1::7], strict=True)
        ]

    def comments(self) -> int:
        return sum(len(mids) for mids in self.state.comments.values())

    def with_comments(self, at_least: int, but: int = -1) -> int:
        """A member (not `but`) with this many comments on one resource of their wall."""
        for m in self.fragment.members.tolist():
            walls = self.state.resources_on_wall(m)
            if m != but and any(len(self.state.comments[r]) >= at_least for r in walls):
                return int(m)
        raise AssertionError("no member has comments on their wall")


def workload(sessions: dict[str, Any], mix: Any = None) -> BGWorkloadConfig:
    return BGWorkloadConfig.model_validate({"sessions": sessions, "mix": mix or "low"})


def test_bg_vocabulary_and_builtins_agree() -> None:
    assert tuple(STEPS) == STEP_NAMES
    for name, d in BUILTIN_SESSIONS.items():
        check_session(name, d, STEP_NAMES)
        assert name in UNITS


def test_a_user_session_plays_bg_actions_with_its_think_times() -> None:
    sessions = {
        "BrowseFriends": {
            "states": {
                "home": {"step": "VP(self)", "next": {"LF(self)": {"think": 250}}},
                "LF(self)": {"next": "VP(friend)"},
                "VP(friend)": {"next": "VTR(friend)"},
                "VTR(friend)": {},
            }
        }
    }
    bg = BG(think_ms=40, workload=workload(sessions))
    a = next(m for m in bg.fragment.members.tolist() if bg.state.friends[m])
    assert bg.play("BrowseFriends", a) == ["VP", "LF", "VP", "VTR"]
    assert bg.think.asked == [0.25, 0.04, 0.04]  # its own, then the workload's thinktime


def test_bg_friend_and_resource_are_chosen_once_per_session() -> None:
    sessions = {
        "Walls": {
            "states": {
                "VP(member)": {"next": "VCR(resource)"},
                "VCR(resource)": {"next": "PCR(resource)"},
                "PCR(resource)": {"next": "VTR(member)"},
                "VTR(member)": {},
            }
        }
    }
    bg = BG(workload=workload(sessions))
    posted = 0
    for a in bg.fragment.members.tolist()[:40]:
        bg.conn.calls.clear()
        acts = bg.play("Walls", a)
        member = bg.conn.calls[0][2]  # view_profile(a, member)
        if acts == ["VP", "VCR", "PCR", "VTR"]:
            posted += 1
            rid = bg.conn.calls[1][2]  # view_comments(a, rid)
            assert rid in bg.state.resources_on_wall(member)
            assert bg.conn.calls[2][2] == rid  # post_comment(a, rid, ...): the same resource
            assert bg.conn.calls[3][2] == member  # view_top_k_resources(a, member, k)
        else:  # the member's wall has no resource
            assert acts == ["VP"] and not bg.state.resources_on_wall(member)
    assert posted > 0


def test_a_reserved_comment_goes_back_when_the_session_ends_before_its_delete() -> None:
    sessions = {
        "PeekComment": {"states": {"VCR(own comment)": {}}},
        "DeleteTwice": {
            "states": {
                "DCR(own comment)": {"next": "again"},
                "again": {"step": "DCR(own comment)"},
            }
        },
    }
    bg = BG(workload=workload(sessions))
    a = bg.with_comments(1)
    total = bg.comments()
    assert bg.play("PeekComment", a) == ["VCR"]
    assert bg.comments() == total  # viewed, not deleted: given back
    bg.conn.fail = {"view_comments"}
    assert bg.play("DeleteCmtOnResSession", a) == ["VP", "VTR", "VCR!"]
    assert bg.comments() == total  # the VCR before the delete failed: given back
    bg.conn.fail = set()
    assert bg.play("DeleteCmtOnResSession", a) == ["VP", "VTR", "VCR", "DCR", "VCR"]
    assert bg.comments() == total - 1
    bg.conn.calls.clear()
    assert bg.play("DeleteTwice", bg.with_comments(2, but=a)) == ["DCR", "DCR"]
    assert bg.comments() == total - 3
    (_, rid1, mid1), (_, rid2, mid2) = bg.conn.calls
    assert (rid1, mid1) != (rid2, mid2)  # two comments, not one twice


def test_unit_table_adds_user_sessions_to_the_builtins() -> None:
    wl = workload({"Mine": {"states": {"VP(self)": {}}}}, mix={"Mine": 1, "VP": 1})
    table = unit_table(wl)
    assert set(table) == {*UNITS, "Mine"}
    assert all(table[name] is UNITS[name] for name in UNITS)  # single actions untouched
    assert resolve_mix(wl.mix, wl.sessions) == {"Mine": 0.5, "VP": 0.5}
    assert resolve_mix("Mine", wl.sessions) == {"Mine": 1.0}
    with pytest.raises(ValueError, match="unknown mix entry 'Mine'"):
        resolve_mix({"Mine": 1})


# -- settings files -----------------------------------------------------------------------

YAML = """\
bg:
  workload:
    thinktime: 10
    mix: {BrowseFriends: 3, ViewSelfProfileSession: 1, VP: 1}
    sessions:
      BrowseFriends:
        start: home
        end: logout
        states:
          home: {step: "VP(self)", next: "LF(self)"}
          "LF(self)":
            next: {"VP(friend)": 0.8, logout: 0.2}
          "VP(friend)":
            next:
              "LF(self)": {p: 0.5, think: 2000}
              logout: 0.5
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    return path


def test_a_user_session_in_a_yaml_settings_file(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, YAML), [])
    wl = cast(BGConfig, settings.workload_config).workload
    d = wl.sessions["BrowseFriends"]
    assert d.start_state == "home" and d.step_of("home") == "VP(self)"
    assert d.states["VP(friend)"].next["LF(self)"].think == 2000
    assert resolve_mix(wl.mix, wl.sessions)["BrowseFriends"] == pytest.approx(0.6)
    assert "BrowseFriends" in unit_table(wl)


@pytest.mark.parametrize(
    ("old", "new", "needles"),
    [
        ("logout: 0.2", "logout: 0.3", ["'BrowseFriends'", "state 'LF(self)'", "add up to 1.1"]),
        ('step: "VP(self)"', 'step: "VP(me)"', ["state 'home'", "unknown step 'VP(me)'"]),
        ("      BrowseFriends:", "      IF:", ["session 'IF'", "built-in"]),
        ("      BrowseFriends:", "      high:", ["session 'high'", "named mix"]),
        ("{BrowseFriends: 3,", "{BrowseFrens: 3,", ["bg.workload.mix", "'BrowseFrens'"]),
        ("p: 0.5, think: 2000", "p: 0.5, think: -1", ["BrowseFriends.states.VP(friend)"]),
        ("start: home", "start: house", ["start state 'house'"]),
    ],
)
def test_a_bad_session_in_a_settings_file_is_one_line(
    tmp_path: Path, old: str, new: str, needles: list[str]
) -> None:
    assert old in YAML
    with pytest.raises(UserError) as caught:
        load_settings(write(tmp_path, YAML.replace(old, new)), [])
    message = str(caught.value)
    assert "\n" not in message and "; and" not in message
    for needle in [*needles, "bg.workload", "settings.yaml"]:
        assert needle in message
