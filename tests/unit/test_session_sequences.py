"""Every unit of BG plays exactly the action sequences it played before sessions became data.

A seeded run on the null store plays each of the 19 units (11 single actions, 8 sessions)
200 times, interleaved, so invitations made by one session are there for another to
accept. A deterministic share of store calls fails, so the branches where a failed action
ends a session run too. The sequences of action codes of each unit, and every store call
with its arguments (which pins the order of the rng and draw calls), are compared with
tests/unit/session_sequences.json.

Regenerate the fixture only when a change of sequences is intended:
    .venv/bin/python tests/unit/test_session_sequences.py --write
"""

import hashlib
import json
import random
import sys
import tempfile
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bgbench.sdk import UnitContext, blocking, run_blocking
from bgbench.validation.logformat import LogWriter
from bgbench.worker.measurement import ERROR, Recorder
from bgbench.workloads.bg.actions import Action
from bgbench.workloads.bg.bookkeeping import FragmentState
from bgbench.workloads.bg.config import BGDatabaseConfig, BGWorkloadConfig
from bgbench.workloads.bg.generator import Fragment, FragmentPlan
from bgbench.workloads.bg.sessions import UNITS, Actor, unit_table
from bgbench.workloads.bg.store import AsyncBGConnection
from bgbench.workloads.bg.stores.null import NullBinding, NullConnection, NullOptions
from bgbench.workloads.bg.timed import TimedConnection

FIXTURE = Path(__file__).with_name("session_sequences.json")
PLAYS = 200
FAIL_SHARE = 0.03
SHOWN = 6  # sequences of each unit kept literally in the fixture
SESSIONS = (
    "ViewSelfProfileSession",
    "ViewFrdProfileSession",
    "PostCmtOnResSession",
    "DeleteCmtOnResSession",
    "InviteFrdSession",
    "AcceptFrdReqSession",
    "RejectFrdReqSession",
    "ThawFrdshipSession",
)

UnitFn = Callable[[Actor, int], Coroutine[Any, Any, Any]]


class KeptActions:
    """Keeps every batch of action timings (the engine's sink folds them instead)."""

    def __init__(self, kept: list[np.ndarray]) -> None:
        self.kept = kept

    def add(self, actions: np.ndarray) -> None:
        self.kept.append(actions)


class StoreFault(Exception):
    pass


class TracedConnection:
    """The null store's connection, recording each call with its arguments and failing a
    seeded share of them (the store's answer to a failed call is an exception)."""

    def __init__(self, conn: NullConnection, calls: list[str], rng: random.Random) -> None:
        self._conn = conn
        self._calls = calls
        self._rng = rng

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._conn, name)

        def call(*args: Any) -> Any:
            self._calls.append(f"{name}{args}")
            if self._rng.random() < FAIL_SHARE:
                raise StoreFault(name)
            return method(*args)

        return call


def play_all(units: Mapping[str, UnitFn]) -> tuple[dict[str, list[str]], str]:
    """Each unit's sequences in play order ("VP VTR LF!": ! marks a failed action), and the
    sha256 of every store call made."""
    db = BGDatabaseConfig(
        usercount=500,
        friendcountperuser=10,
        confperc=0.6,
        resourcecountperuser=3,
        commentcountperresource=1,
        attrcount=2,
        attrlength=8,
        commentlength=10,
    )
    fragment = Fragment(db, FragmentPlan((1.0,), 0.27), 0)
    binding = NullBinding(NullOptions())
    binding.load_fragment(fragment)
    state = FragmentState(fragment)
    calls: list[str] = []
    conn = TracedConnection(binding.connect(), calls, random.Random(11))
    zipf = fragment.local_zipf()
    np_rng = np.random.default_rng(5)
    buf: list[int] = []

    def draw() -> int:
        nonlocal buf
        if not buf:
            buf = zipf.draw(np_rng, 1024).tolist()
        return buf.pop()

    async def no_think(_seconds: float) -> bool:
        return True

    order = [u for u in UNITS for _ in range(PLAYS)]
    random.Random(3).shuffle(order)
    with tempfile.TemporaryDirectory() as tmp:
        log = LogWriter(Path(tmp) / "sequences.bglog")
        kept: list[np.ndarray] = []
        recorder = Recorder(log, sink=KeptActions(kept))
        timed = TimedConnection(blocking(conn, AsyncBGConnection), recorder, 0)
        rng = random.Random("sessions")
        actor = Actor(timed, state, draw, rng, 0, 5, fragment.comment_text)
        ctx = UnitContext(timed, rng, no_think)
        for sid, unit in enumerate(order):
            socialite = state.acquire_socialite(draw)
            assert socialite is not None
            ctx.sid, ctx.intended = sid, 0
            run_blocking(units[unit](actor, ctx, socialite))
            state.release_socialite(socialite)
        recorder.finish()
        acts = np.concatenate(kept)
        log.close()
    per_play: list[list[str]] = [[] for _ in order]
    for code, status, sid in zip(
        acts["action"].tolist(), acts["status"].tolist(), acts["session"].tolist(), strict=True
    ):
        per_play[sid].append(Action(code).name + ("!" if status == ERROR else ""))
    sequences: dict[str, list[str]] = {u: [] for u in UNITS}
    for unit, seq in zip(order, per_play, strict=True):
        sequences[unit].append(" ".join(seq))
    return sequences, hashlib.sha256("\n".join(calls).encode()).hexdigest()


def digest(sequences: list[str]) -> str:
    return hashlib.sha256("\n".join(sequences).encode()).hexdigest()


def pinned_form(sequences: dict[str, list[str]], trace: str) -> dict[str, Any]:
    return {
        "plays_per_unit": PLAYS,
        "store_calls_sha256": trace,
        "units": {
            unit: {
                "sha256": digest(seqs),
                "first": seqs[:SHOWN],
                "distinct": sorted(set(seqs)),
            }
            for unit, seqs in sequences.items()
        },
    }


@pytest.mark.parametrize("table", ["UNITS", "unit_table"])
def test_every_unit_plays_the_pinned_sequences(table: str) -> None:
    pinned = json.loads(FIXTURE.read_text())
    units = UNITS if table == "UNITS" else unit_table(BGWorkloadConfig())
    sequences, trace = play_all(units)
    now = pinned_form(sequences, trace)
    assert set(now["units"]) == set(pinned["units"])
    for unit, want in pinned["units"].items():
        got = now["units"][unit]
        assert got["first"] == want["first"], unit
        assert got["distinct"] == want["distinct"], unit
        assert got["sha256"] == want["sha256"], unit
    # Same sequences, same targets: the rng and draw calls came in the same order.
    assert now["store_calls_sha256"] == pinned["store_calls_sha256"]


def test_the_run_reaches_every_branch() -> None:
    """The fixture is only worth pinning if each session went every way it can."""
    units = json.loads(FIXTURE.read_text())["units"]
    clean = {u: {s for s in v["distinct"] if "!" not in s} for u, v in units.items()}
    full = {
        "ViewSelfProfileSession": "VP VTR",
        "ViewFrdProfileSession": "VP VTR LF VP VTR",
        "PostCmtOnResSession": "VP VTR VP VTR VCR PCR VCR",
        "DeleteCmtOnResSession": "VP VTR VCR DCR VCR",
        "InviteFrdSession": "VP VTR LF IF VFR",
        "AcceptFrdReqSession": "VP VTR LF VFR AFR VFR LF",
        "RejectFrdReqSession": "VP VTR LF VFR RFR VFR LF",
        "ThawFrdshipSession": "VP VTR LF TF LF",
    }
    for session, sequence in full.items():
        assert sequence in clean[session], session
        assert any("!" in s for s in units[session]["distinct"]), session  # a failure ended it
    # No target at all: nobody to accept, no comment to delete, no friend to view.
    assert "VP VTR LF VFR" in clean["AcceptFrdReqSession"]
    assert "VP VTR" in clean["DeleteCmtOnResSession"]
    assert "VP VTR LF" in clean["ViewFrdProfileSession"]
    # The VCR before a delete failed: the session ends there.
    assert "VP VTR VCR!" in units["DeleteCmtOnResSession"]["distinct"]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: test_session_sequences.py --write  (re-pins the sequences)")
    FIXTURE.write_text(json.dumps(pinned_form(*play_all(UNITS)), indent=1) + "\n")
    print(f"wrote {FIXTURE}")
