"""Parking: a cycle that reuses the last cycle's parked answers decides exactly what it would
decide without them, over random histories of submissions, ends, node and quota changes,
reservations, fair-share moves and time; and a quiet cycle reuses them."""

from dataclasses import replace
from datetime import timedelta

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from bench.scheduler_scale import build
from scheduling.engine import (
    ClusterSnapshot,
    Policy,
    Reservation,
    RunningWorkload,
    RuntimeSamples,
    schedule,
    schedule_keeping,
)
from scheduling.engine.simulation import nodes_less

from .builders import NOW, node, quota, request

TENANTS = ("acme", "globex", "initech")
POLICY = Policy(placement="bestfit", reclaim_after=timedelta(minutes=10))


class ParkedCycles(RuleBasedStateMachine):
    """The portal's queue between cycles; every rule is followed by a cycle run twice, with
    the last cycle's parking and without, whose decisions must be the same."""

    @initialize()
    def cluster(self):
        self.nodes = [
            node(f"n{i}", gpus=4, pool="a" if i < 3 else "b", topology={"rack": f"r{i // 2}"})
            for i in range(5)
        ]
        self.quotas = {t: quota(t, gpus=6, limit=12, cohort="all") for t in TENANTS}
        self.reservations: list[Reservation] = []
        self.usage = dict.fromkeys(TENANTS, 0.0)
        self.pending = {}
        self.running: dict[str, RunningWorkload] = {}
        self.now = NOW
        self.parking = None
        self.serial = 0
        self.reused = 0

    def cycle(self):
        snapshot = ClusterSnapshot(
            nodes=nodes_less(self.nodes, self.running.values()),
            quotas=tuple(self.quotas.values()),
            reservations=tuple(self.reservations),
            tenant_weights={"acme": 2.0},
            tenant_usage=dict(self.usage),
            runtimes=RuntimeSamples(),
        )
        arguments = {
            "snapshot": snapshot,
            "pending": list(self.pending.values()),
            "running": list(self.running.values()),
            "now": self.now,
            "policy": POLICY,
        }
        parked = schedule(**arguments, parked=self.parking)
        assert parked == schedule(**arguments)
        if self.parking is not None:
            self.reused += sum(
                answer is self.parking.answers.get(request_id)
                for request_id, answer in parked.parking.answers.items()
            )
        self.parking = parked.parking
        for preemption in parked.preemptions:
            victim = self.running.pop(preemption.victim_id).request
            self.pending[victim.id] = replace(victim, evictions=victim.evictions + 1)
        for admission in parked.admissions:
            self.running[admission.request_id] = RunningWorkload(
                request=self.pending.pop(admission.request_id),
                gpu_class=admission.gpu_class,
                placements=admission.placements,
                started_at=self.now,
                borrowed=admission.borrowed,
            )

    @rule(
        tenant=st.sampled_from(TENANTS),
        tier=st.integers(0, 2),
        gpus=st.sampled_from([1, 2, 4]),
        replicas=st.integers(1, 3),
        runtime=st.sampled_from([None, 20, 120, 600]),
        min_run=st.sampled_from([0, 1, 15]),
    )
    def submit(self, tenant, tier, gpus, replicas, runtime, min_run=0):
        self.serial += 1
        submitted = request(
            f"w{self.serial}",
            tenant=tenant,
            tier=tier,
            gpus=gpus,
            replicas=replicas,
            preemptible=tier == 0,
            max_runtime=timedelta(minutes=runtime) if runtime else None,
            min_run_time=timedelta(minutes=min_run),
        )
        self.pending[submitted.id] = replace(submitted, submitted_at=self.now)
        self.cycle()

    @rule(data=st.data())
    def finish(self, data):
        if self.running:
            del self.running[data.draw(st.sampled_from(sorted(self.running)))]
        self.cycle()

    @rule(index=st.integers(0, 4))
    def cordon(self, index):
        self.nodes[index] = replace(self.nodes[index], cordoned=not self.nodes[index].cordoned)
        self.cycle()

    @rule(tenant=st.sampled_from(TENANTS), guarantee=st.integers(0, 8), more=st.integers(0, 8))
    def grant(self, tenant, guarantee, more):
        self.quotas[tenant] = quota(tenant, gpus=guarantee, limit=guarantee + more, cohort="all")
        self.cycle()

    @rule(
        tenant=st.sampled_from(TENANTS),
        pool=st.sampled_from("ab"),
        opens=st.sampled_from([0, 5, 30, 90]),
        hours=st.integers(1, 3),
    )
    def reserve(self, tenant, pool, opens, hours):
        starts_at = self.now + timedelta(minutes=opens)
        self.reservations.append(
            Reservation(
                id=f"r{len(self.reservations)}",
                tenant=tenant,
                gpu_class="H100-80GB",
                gpus=4,
                pool=pool,
                starts_at=starts_at,
                ends_at=starts_at + timedelta(hours=hours),
            )
        )
        self.cycle()

    @rule(tenant=st.sampled_from(TENANTS), share=st.floats(0, 1))
    def fair_share_moves(self, tenant, share):
        self.usage[tenant] = share
        self.cycle()

    @rule(seconds=st.sampled_from([5, 60, 300, 600, 3600]))
    def time_passes(self, seconds):
        self.now += timedelta(seconds=seconds)
        self.cycle()

    @rule(cycles=st.integers(1, 3))
    def quiet(self, cycles):
        for _ in range(cycles):
            self.now += timedelta(seconds=5)
            self.cycle()

    @invariant()
    def every_parked_answer_is_of_a_waiting_request(self):
        if self.parking is not None:
            assert set(self.parking.answers) <= set(self.pending)


ParkedCycles.TestCase.settings = settings(
    max_examples=80, stateful_step_count=30, deadline=None, derandomize=True
)
test_a_cycle_with_parking_decides_as_without = ParkedCycles.TestCase


def quiet_cycles():
    machine = ParkedCycles()
    machine.cluster()
    for index, tier in enumerate([0, 0, 0, 0, 0, 0, 0]):
        machine.submit(TENANTS[index % 3], tier, 4, 2, None)
    return machine


def test_a_quiet_cycle_reuses_every_parked_answer():
    machine = quiet_cycles()
    machine.time_passes(5)
    parked = machine.parking.answers
    machine.time_passes(5)
    assert parked and all(machine.parking.answers[i] is parked[i] for i in parked)


def test_a_node_uncordoned_unparks_every_answer():
    machine = quiet_cycles()
    machine.cordon(0)
    parked = machine.parking.answers
    machine.cordon(0)
    assert not any(machine.parking.answers.get(i) is parked[i] for i in parked)


def test_the_benchmark_queue_decides_as_without_parking_and_reuses_most_answers():
    snapshot, pending, running = build(nodes=200, pending=2_000, tenants=20, seed=42)
    policy = Policy(placement="fgd_cpu_waste_demand")
    first, end = schedule_keeping(
        snapshot=snapshot, pending=pending, running=running, now=NOW, policy=policy
    )
    admitted = {a.request_id for a in first.admissions}
    evicted = {p.victim_id for p in first.preemptions}
    waiting = [r for r in pending if r.id not in admitted] + [
        replace(w.request, evictions=w.request.evictions + 1)
        for w in running
        if w.request.id in evicted
    ]
    state = {"snapshot": end.snapshot, "pending": waiting, "running": end.running}
    following = schedule(**state, now=NOW + timedelta(seconds=5), policy=policy)
    quiet = {**state, "now": NOW + timedelta(seconds=10), "policy": policy}
    parked = schedule(**quiet, parked=following.parking)
    assert parked == schedule(**quiet)
    reused = [i for i, a in parked.parking.answers.items() if following.parking.answers[i] is a]
    assert len(reused) > len(parked.pending) / 2
