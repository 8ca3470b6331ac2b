"""Agents over gRPC: the handshake, and a fault mid-experiment that must not hang."""

import threading

import grpc
import pytest

from bgbench.coordinator.configuration.config import load_settings, parse_override
from bgbench.coordinator.execution.agents import AgentClient, spawn_local_agents
from bgbench.coordinator.execution.experiment import Cluster, run_experiment
from bgbench.errors import UserError
from bgbench.protos import PROTOCOL_VERSION
from bgbench.protos import worker_pb2 as pb
from bgbench.protos import worker_pb2_grpc as pb_grpc


@pytest.fixture
def two_agents(tmp_path):
    agents = spawn_local_agents(2, 1, tmp_path, timeout=60)
    try:
        yield agents
    finally:
        agents.close()


def test_handshake_reports_host_facts(two_agents):
    client = AgentClient(two_agents.addresses[0])
    facts = client.handshake()
    assert facts.protocol_version == PROTOCOL_VERSION
    assert facts.cores >= 1 and facts.memory_bytes > 0 and facts.load_processes == 1
    client.close()


def test_a_protocol_mismatch_is_refused(two_agents):
    channel = grpc.insecure_channel(two_agents.addresses[0])
    reply = pb_grpc.WorkerStub(channel).Handshake(
        pb.HandshakeRequest(protocol_version=PROTOCOL_VERSION + 1), timeout=10
    )
    assert "protocol version mismatch" in reply.error.message
    assert reply.error.kind == "user"
    channel.close()


def test_run_before_prepare_is_a_clear_error(two_agents):
    client = AgentClient(two_agents.addresses[0])
    with pytest.raises(UserError, match="prepare"):
        list(client.run(pb.RunRequest(experiment_id="x", threads=1, duration_seconds=1)))
    client.close()


def test_a_killed_agent_is_an_infrastructure_failure(two_agents, tmp_path):
    settings = load_settings(
        None,
        [
            parse_override("store.name=sqlite"),
            parse_override(f"store.options.path={tmp_path / 'db.sqlite'}"),
            parse_override("usercount=500"),
        ],
    )
    cluster = Cluster.connect(two_agents.addresses, None)
    cluster.prepare(settings)
    first_progress = threading.Event()
    outcome = {}

    def experiment():
        outcome["result"] = run_experiment(
            cluster, settings, 4, 60.0, "killed", lambda i, p: first_progress.set()
        )

    runner = threading.Thread(target=experiment)
    runner.start()
    assert first_progress.wait(30), "no progress from the agents"
    two_agents.processes[1].kill()
    runner.join(45)  # well before the 60 s duration: the fault ends the experiment
    assert not runner.is_alive(), "the coordinator hung on a dead agent"
    result = outcome["result"]
    assert result.fault and two_agents.addresses[1] in result.fault
    assert not result.passed
    cluster.close()


def test_live_latency_deltas_add_up_to_the_run_exactly(two_agents, tmp_path):
    from bgbench.coordinator.records.metrics import decode, new_histogram, percentile

    settings = load_settings(
        None, [parse_override("store.name=null"), parse_override("usercount=500")]
    )
    cluster = Cluster.connect(two_agents.addresses, None)
    cluster.prepare(settings)
    deltas = {0: new_histogram(), 1: new_histogram()}
    events = []

    def progress(i, p):
        events.append(i)
        if p.response_hist_delta:
            deltas[i].add(decode(p.response_hist_delta))

    result = run_experiment(cluster, settings, 4, 3.0, "live", progress)
    assert not result.fault
    assert len(events) >= 4  # about one per second per agent
    for i, agent in enumerate(result.agents):
        assert deltas[i].get_total_count() == agent.actions  # nothing lost, nothing twice
        assert percentile(deltas[i], 95) == percentile(decode(agent.response_hist.encode()), 95)
    pooled = new_histogram()
    for h in deltas.values():
        pooled.add(h)
    assert percentile(pooled, 95) / 1000 == result.overall.p95_ms  # merged exactly
    assert result.coordinator_cpu_s > 0 and result.progress_events == len(events) + 2
    cluster.close()


def test_measured_capacity_sizes_the_fragments(tmp_path):
    import numpy as np

    from bgbench.workloads.zipf import assign_fragments, zipf_weights

    one = spawn_local_agents(1, 1, tmp_path / "one", timeout=60)
    try:
        two = spawn_local_agents(1, 2, tmp_path / "two", timeout=60)
        try:
            cluster = Cluster.connect(one.addresses + two.addresses, None, measure=True)
            slow, fast = cluster.capacities
            assert fast == 1.0 and 0.3 <= slow <= 0.7  # two load processes on two cores: ~2x
            assert len(cluster.layout.capacities) == 3  # one fragment per load process
            owner = assign_fragments(1000, 0.27, cluster.layout.capacities)
            mass = np.bincount(owner, weights=zipf_weights(1000, 0.27))
            share_of_fast = mass[1:].sum()  # fragments 1 and 2 belong to the two-process agent
            assert abs(share_of_fast - fast / (slow + fast)) < 0.01
            cluster.close()
        finally:
            two.close()
    finally:
        one.close()
