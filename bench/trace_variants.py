"""Generate pod lists as the FGD paper built its trace variants, from the default list.

Each variant is drawn from the default list's own pods (a numpy generator seeded with --seed
and the variant's name, so one file does not depend on which others are asked for), and written
in the default list's CSV format for ``bench/trace_replay.py --pods``:
- ``gpushareNN``: the GPU pods resampled with replacement (their count kept) so that NN% of the
  GPU request comes from GPU-sharing pods; CPU-only pods kept as they are.
- ``multigpuNN``: the whole list, plus multi-GPU pods drawn with replacement until NN% of the
  GPU request comes from multi-GPU pods.
- ``gpuspecNN``: the whole list, with NN% of the GPU pods (drawn at random) pinned to one GPU
  model, drawn in proportion to the GPUs of the models whose nodes could host the pod.
- ``cpuNNN``: the GPU pods kept, the CPU-only pods resampled with replacement until their CPU
  request is NNN% of the default list's (cpu100 is the default list's mix).
Prints one JSON line (per file: pods, GPU request, shares of it); the files go to --out, not to
the repository.

    nice .venv/bin/python bench/trace_variants.py --out /tmp/variants --seed 1
    nice .venv/bin/python bench/trace_replay.py --pods /tmp/variants/openb_pod_list_gpuspec20_s1.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
TRACE = REPO.parent / "shared" / "traces" / "alibaba-gpu-v2023"
COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
# The paper's variants (its Sections 6.2-6.5), the lists its simulator outputs cover.
PAPER_VARIANTS = (
    "gpushare20,gpushare40,gpushare60,gpushare80,gpushare100,"
    "multigpu20,multigpu30,multigpu40,multigpu50,"
    "gpuspec10,gpuspec20,gpuspec25,gpuspec33,"
    "cpu050,cpu100,cpu200,cpu250"
)

Row = dict[str, str]


def gpus(row: Row) -> int:
    return int(row["num_gpu"] or 0)


def request(row: Row) -> int:
    """GPU request in milli-GPU."""
    return gpus(row) * int(row["gpu_milli"] or 0) if gpus(row) else 0


def is_shared(row: Row) -> bool:
    return gpus(row) == 1 and 0 < int(row["gpu_milli"]) < 1000


def read_rows(path: Path) -> list[Row]:
    with path.open(newline="") as handle:
        return [dict(row) for row in csv.DictReader(handle)]


def gpushare(rows: list[Row], percent: int, rng: np.random.Generator, **_) -> list[Row]:
    cpu_only = [r for r in rows if not gpus(r)]
    shared = [r for r in rows if gpus(r) and is_shared(r)]
    whole = [r for r in rows if gpus(r) and not is_shared(r)]
    target = percent / 100
    mean_shared = np.mean([request(r) for r in shared])
    mean_whole = np.mean([request(r) for r in whole])
    # The share of draws from shared pods whose expected GPU request share is the target.
    draws = len(shared) + len(whole)
    fraction = target * mean_whole / (mean_shared * (1 - target) + target * mean_whole)
    picked_shared = int(fraction * draws + 0.5)
    picked = [shared[i] for i in rng.integers(len(shared), size=picked_shared)]
    if draws > picked_shared:
        picked += [whole[i] for i in rng.integers(len(whole), size=draws - picked_shared)]
    return cpu_only + picked


def multigpu(rows: list[Row], percent: int, rng: np.random.Generator, **_) -> list[Row]:
    multi = [r for r in rows if gpus(r) > 1]
    result = list(rows)
    total = sum(request(r) for r in rows)
    of_multi = sum(request(r) for r in multi)
    while of_multi < percent / 100 * total:
        row = multi[int(rng.integers(len(multi)))]
        result.append(row)
        total += request(row)
        of_multi += request(row)
    return result


def gpuspec(
    rows: list[Row], percent: int, rng: np.random.Generator, *, nodes: list[Row]
) -> list[Row]:
    result = [dict(r) for r in rows]
    with_gpus = [i for i, r in enumerate(result) if gpus(r)]
    count = int(percent / 100 * len(with_gpus) + 0.5)
    chosen = rng.choice(with_gpus, size=count, replace=False)
    for i in sorted(chosen.tolist()):
        row = result[i]
        weights: dict[str, int] = {}
        for node in nodes:
            if (
                int(node["gpu"]) >= gpus(row)
                and int(node["cpu_milli"]) >= int(row["cpu_milli"])
                and int(node["memory_mib"]) >= int(row["memory_mib"])
            ):
                weights[node["model"]] = weights.get(node["model"], 0) + int(node["gpu"])
        if weights:
            models = sorted(weights)
            odds = np.array([weights[m] for m in models], dtype=float)
            row["gpu_spec"] = models[int(rng.choice(len(models), p=odds / odds.sum()))]
    return result


def cpu(rows: list[Row], percent: int, rng: np.random.Generator, **_) -> list[Row]:
    cpu_only = [r for r in rows if not gpus(r)]
    target = percent / 100 * sum(int(r["cpu_milli"]) for r in cpu_only)
    result = [r for r in rows if gpus(r)]
    added = 0
    while added < target:
        row = cpu_only[int(rng.integers(len(cpu_only)))]
        result.append(row)
        added += int(row["cpu_milli"])
    return result


FAMILIES: dict[str, Callable[..., list[Row]]] = {
    "gpushare": gpushare,
    "multigpu": multigpu,
    "gpuspec": gpuspec,
    "cpu": cpu,
}


def generate(*, variant: str, rows: list[Row], nodes: list[Row], seed: int) -> list[Row]:
    match = re.fullmatch(r"([a-z]+)(\d+)", variant)
    if match is None or match.group(1) not in FAMILIES:
        raise SystemExit(f"unknown variant {variant!r}; families: {', '.join(FAMILIES)}")
    family, percent = match.group(1), int(match.group(2))
    rng = np.random.default_rng([seed, zlib.crc32(variant.encode())])
    generated = FAMILIES[family](rows, percent, rng, nodes=nodes)
    # The list is shuffled on replay; names only have to be unique.
    return [{**row, "name": f"openb-pod-{i:05d}"} for i, row in enumerate(generated)]


def describe(rows: list[Row]) -> dict:
    total = sum(request(r) for r in rows)
    with_gpus = [r for r in rows if gpus(r)]
    return {
        "pods": len(rows),
        "gpu_request_gpus": round(total / 1000, 1),
        "shared_pct": round(100 * sum(request(r) for r in rows if is_shared(r)) / total, 1),
        "multigpu_pct": round(100 * sum(request(r) for r in rows if gpus(r) > 1) / total, 1),
        "pinned_pct": round(
            100 * sum(1 for r in with_gpus if (r.get("gpu_spec") or "").strip()) / len(with_gpus),
            1,
        ),
        "cpu_only_cores": round(sum(int(r["cpu_milli"]) for r in rows if not gpus(r)) / 1000),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for the CSV files")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--variants", default=PAPER_VARIANTS, help="comma list, e.g. gpushare30,gpuspec20,cpu200"
    )
    parser.add_argument("--pods", type=Path, default=TRACE / "openb_pod_list_default.csv")
    parser.add_argument("--nodes", type=Path, default=TRACE / "openb_node_list_gpu_node.csv")
    args = parser.parse_args()

    rows, nodes = read_rows(args.pods), read_rows(args.nodes)
    args.out.mkdir(parents=True, exist_ok=True)
    files = {}
    for variant in args.variants.split(","):
        generated = generate(variant=variant, rows=rows, nodes=nodes, seed=args.seed)
        path = args.out / f"openb_pod_list_{variant}_s{args.seed}.csv"
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(
                {column: row.get(column, "") for column in COLUMNS} for row in generated
            )
        files[path.name] = describe(generated)
    print(
        json.dumps(
            {"bench": "trace_variants", "seed": args.seed, "out": str(args.out), "files": files}
        )
    )


if __name__ == "__main__":
    main()
