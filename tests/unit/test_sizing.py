"""The local layout chosen when the user does not say (coordinator/execution/sizing.py)."""

import pytest

from bgbench.coordinator.configuration.config import load_settings
from bgbench.coordinator.execution import sizing


def settings(**overrides):  # type: ignore[no-untyped-def]
    return load_settings(None, list(overrides.items()))


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(sizing.os, "cpu_count", lambda: 2)


def test_one_thread_gets_one_agent_and_one_process(two_cores):
    s = settings(**{"store.name": "null"})
    sizing.resolve_local_layout(s, 1)
    assert (s.agents.local, s.agents.processes) == (1, 1)


def test_a_rating_gets_one_process_per_core(two_cores):
    s = settings(**{"store.name": "sqlite"})
    sizing.resolve_local_layout(s, None)
    assert (s.agents.local, s.agents.processes) == (2, 1)
    s = settings(**{"store.name": "sqlite", "agents.local": 1})
    sizing.resolve_local_layout(s, None)
    assert (s.agents.local, s.agents.processes) == (1, 2)


def test_many_threads_of_a_blocking_store_get_more_processes(two_cores):
    s = settings(**{"store.name": "sqlite", "agents.local": 1})
    sizing.resolve_local_layout(s, 1024)
    assert s.agents.processes == 8  # capped at 4 per core
    s = settings(**{"store.name": "sqlite", "agents.local": 1})
    sizing.resolve_local_layout(s, 200)
    assert s.agents.processes == 4  # ceil(200 / 64)


def test_many_tasks_on_an_event_loop_stay_one_process_per_core(two_cores):
    s = settings(**{"store.name": "null", "agents.local": 1})
    sizing.resolve_local_layout(s, 4096)
    assert s.agents.processes == 2


def test_what_the_user_sets_is_kept(two_cores):
    s = settings(**{"store.name": "sqlite", "agents.local": 2, "agents.processes": 3})
    sizing.resolve_local_layout(s, 1)
    assert (s.agents.local, s.agents.processes) == (2, 3)
