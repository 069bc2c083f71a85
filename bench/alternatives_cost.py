"""The cost of one workload's alternatives at scale.

On ``scheduler_scale``'s synthetic state (10,000 pending on 1,000 nodes x 8 GPUs by
default), one cycle leaves work pending; for the first ``--workloads`` of it (queue order),
``engine.alternatives`` is timed end to end, the request's own answer included, with
``trials.kept_answers`` (a what-if per variant on the state the cycle kept: what the console's
workload page and the API's detail use) or, ``--answers cycle``, ``trials.cycle_answers`` (a
full cycle per variant). Prints one JSON line (median seconds per workload, engine runs per
workload); appends it to bench/RESULTS.md unless --no-results.

    nice python bench/alternatives_cost.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.results import append_results, calibration_seconds  # noqa: E402
from bench.scheduler_scale import NOW, build, state_arguments  # noqa: E402
from scheduling.engine import Policy  # noqa: E402
from scheduling.engine.alternatives import alternatives  # noqa: E402
from scheduling.engine.trials import cycle_answers, kept_answers  # noqa: E402
from scheduling.engine.what_if import schedule_keeping  # noqa: E402


def main() -> None:
    parser = state_arguments(__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=3, help="pending workloads timed")
    parser.add_argument("--answers", choices=("kept", "cycle"), default="kept")
    parser.add_argument("--no-results", action="store_true", help="do not touch RESULTS.md")
    args = parser.parse_args()

    snapshot, pending, running = build(
        nodes=args.nodes, pending=args.pending, tenants=args.tenants, seed=args.seed
    )
    policy = Policy(placement=args.policy, seed=args.seed)
    decisions, end = schedule_keeping(
        snapshot=snapshot, pending=pending, running=running, now=NOW, policy=policy
    )
    by_id = {r.id: r for r in pending}
    chosen = [by_id[p.request_id] for p in decisions.pending[: args.workloads]]
    if args.answers == "kept":
        answer_of = kept_answers(end, now=NOW)
    else:
        answer_of = cycle_answers(
            snapshot=snapshot, pending=pending, running=running, now=NOW, policy=policy
        )
    calls: list[str] = []

    def counted(variant, **how):
        calls.append(variant.id)
        return answer_of(variant, **how)

    walls, runs, found = [], [], []
    for request in chosen:
        calls.clear()
        wall = time.perf_counter()
        offered = alternatives(
            request=request,
            waiting=counted(request),
            snapshot=snapshot,
            running=running,
            now=NOW,
            answer_of=counted,
            may_shrink=True,
        )
        walls.append(time.perf_counter() - wall)
        runs.append(len(calls))
        found.append(len(offered))
    line = {
        "bench": "alternatives_cost",
        "calibration_s": calibration_seconds(),
        "nodes": args.nodes,
        "pending": args.pending,
        "policy": args.policy,
        "answers": args.answers,
        "workloads": len(chosen),
        "seconds_per_workload": round(statistics.median(walls), 3),
        "seconds_runs": [round(w, 3) for w in walls],
        "engine_runs": runs,
        "alternatives_found": found,
    }
    print(json.dumps(line))
    if not args.no_results:
        append_results(bench="alternatives_cost", argv=sys.argv, figures=line)


if __name__ == "__main__":
    main()
