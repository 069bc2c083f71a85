"""The replay report's figures from a simulation built by hand: no database, no clock."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from portal.money import to_cents
from scheduling.engine.model import ReplicaPlacement
from scheduling.engine.simulation import Simulation, Stint
from scheduling.selectors.prices import UsagePrices
from scheduling.selectors.replay_report import RecordedWork, scenario_figures

SINCE = datetime(2026, 3, 2, tzinfo=UTC)
UNTIL = SINCE + timedelta(days=1)


def figures(*stints: Stint):
    work = {
        stint.request_id: RecordedWork(
            organization="acme",
            tier="training",
            submitted_at=stint.started_at,
            gpu_milli=stint.gpu_milli,
            gpu_class="H100-80GB",
        )
        for stint in stints
    }
    return scenario_figures(
        simulation=Simulation(stints=stints, first_starts={}, evictions=(), cycles=1),
        work=work,
        since=SINCE,
        until=UNTIL,
        capacity={"H100-80GB": 64},
        weights={},
        prices={"acme": UsagePrices({("H100-80GB", "", ""): Decimal("2.50")})},
    )


def eight_h100s(request_id: str, *, started_at: datetime, ended_at: datetime) -> Stint:
    placement = ReplicaPlacement(node="dgx-1", gpu_indices=tuple(range(8)), gpu_milli=1000)
    return Stint(request_id, "H100-80GB", (placement,), started_at, ended_at)


def test_revenue_is_the_gpu_hours_at_the_price_to_the_cent():
    # 8.00889 GPU-hours: rounded to the hundredth first, 8.01 x 2.50 would make 20.03.
    hour = SINCE + timedelta(hours=3)
    run = eight_h100s("a", started_at=hour, ended_at=hour + timedelta(hours=1, seconds=4))
    report = figures(run)
    assert report.revenue["acme"] == to_cents(report.gpu_hours["H100-80GB"] * Decimal("2.50"))


def test_a_stint_cut_at_the_span_s_edges_counts_only_its_time_inside():
    before = eight_h100s(
        "a", started_at=SINCE - timedelta(hours=2), ended_at=SINCE + timedelta(minutes=30)
    )
    after = eight_h100s(
        "b", started_at=UNTIL - timedelta(minutes=15), ended_at=UNTIL + timedelta(hours=5)
    )
    report = figures(before, after)
    assert (report.gpu_hours["H100-80GB"], report.revenue["acme"]) == (Decimal(6), Decimal("15.00"))
