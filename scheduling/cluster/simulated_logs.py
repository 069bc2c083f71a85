"""What the simulated cluster's workloads write to their logs: real-looking progress derived
from the workload's manifest and its simulated runtime. Each line is a pure function of the
workload and the time, so nothing is stored, and a follower sees new lines as the simulated
time moves on.

Each replica writes two lines when its container starts, then a line every `LINE_SECONDS`:
a Job (training, fine-tuning, batch inference) its epoch, step, loss, learning rate, throughput
and GPU memory; a Deployment (an inference service) the requests it answered; a notebook's Pod
its Jupyter server's doings. A Job that ends writes its summary, or, with `SIMULATED_EXIT=fail`,
an error and a traceback; one stopped at its deadline writes nothing more.
"""

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from .specs import LogLine

LINE_SECONDS = 10
STEPS_PER_EPOCH = 500
BATCH_PER_GPU = 32
GPU_MEMORY_GIB = 80.0
HEADER_LINES = 2


@dataclass(frozen=True)
class SimulatedRun:
    """A simulated workload's containers, as its logs need them."""

    name: str
    kind: str  # of its object: Job, Deployment or Pod
    replicas: int
    gpus: int  # per replica
    started: datetime  # when its containers started
    end: float | None  # seconds after `started` its containers stop; None: they run on
    fails: bool  # it ends with an error
    killed: bool  # stopped at its deadline, in the middle of its work
    gpu_memory: float  # the share of each GPU's memory it uses
    runtime: float  # the seconds a Job needs

    def offset(self, at: datetime) -> float:
        return (at - self.started).total_seconds()

    def ended_by(self, at: datetime) -> bool:
        return self.end is not None and self.offset(at) >= self.end

    def footer(self) -> list[str]:
        if self.end is None or self.killed:
            return []
        return _failure(self) if self.fails else _summary(self)


def _unit(*parts) -> float:
    """A number in [0, 1) that depends on `parts` alone: the simulation's noise."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S")


def _steps_per_second(run: SimulatedRun) -> float:
    return round(1.0 + 2.0 * _unit(run.name, "speed"), 2)


def _total_steps(run: SimulatedRun) -> int:
    return max(1, int(run.runtime * _steps_per_second(run)))


def _epochs(run: SimulatedRun) -> int:
    return max(1, math.ceil(_total_steps(run) / STEPS_PER_EPOCH))


def _loss(run: SimulatedRun, step: int) -> float:
    decay = math.exp(-3.0 * step / _total_steps(run))
    return 0.25 + 2.3 * decay + 0.04 * (_unit(run.name, "loss", step) - 0.5)


def _gpu_memory(run: SimulatedRun, replica: int, n: int) -> str:
    used = run.gpu_memory * GPU_MEMORY_GIB + 0.6 * _unit(run.name, replica, n, "memory")
    return f"gpu_mem {min(used, GPU_MEMORY_GIB):.1f}/{GPU_MEMORY_GIB:.1f} GiB"


def _header(run: SimulatedRun, replica: int) -> list[str]:
    if run.kind == "Job":
        gpus = max(run.gpus, 1)
        return [
            f"rank {replica}/{run.replicas}: {gpus} GPU(s) visible, NCCL initialised "
            f"(world size {run.replicas * gpus})",
            f"dataset loaded: 1281167 samples; {_epochs(run)} epoch(s) of "
            f"{STEPS_PER_EPOCH} steps, batch {BATCH_PER_GPU} per GPU",
        ]
    if run.kind == "Deployment":
        return [
            f"INFO: loading model weights onto {max(run.gpus, 1)} GPU(s) (replica {replica})",
            "INFO: Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
        ]
    return [
        "[I ServerApp] Jupyter Server 2.14.2 is running at: http://127.0.0.1:8888/lab",
        "[I ServerApp] Use Control-C to stop this server and shut down all kernels",
    ]


def _progress(run: SimulatedRun, replica: int, i: int) -> str:
    """The i-th (from 1) periodic line of a replica."""
    noise = _unit(run.name, replica, i)
    if run.kind == "Job":
        step = min(int(i * LINE_SECONDS * _steps_per_second(run)), _total_steps(run))
        epoch = min(step // STEPS_PER_EPOCH + 1, _epochs(run))
        rate = 3e-4 * 0.5 * (1 + math.cos(math.pi * step / _total_steps(run)))
        throughput = BATCH_PER_GPU * max(run.gpus, 1) * _steps_per_second(run)
        throughput *= 0.97 + 0.06 * noise
        return (
            f"epoch {epoch}/{_epochs(run)} step {step}/{_total_steps(run)} "
            f"loss {_loss(run, step):.4f} lr {rate:.2e} throughput {throughput:.1f} samples/s "
            f"{_gpu_memory(run, replica, i)}"
        )
    if run.kind == "Deployment":
        tokens = 64 + int(900 * noise)
        latency = 40 + int(tokens * (0.25 + 0.1 * _unit(run.name, replica, i, "latency")))
        return (
            f'INFO: 10.0.{i % 250}.{int(noise * 250)} - "POST /v1/completions HTTP/1.1" 200 OK'
            f" tokens={tokens} latency_ms={latency} {_gpu_memory(run, replica, i)}"
        )
    if i % 6 == 0:
        return f"[I ServerApp] Saving file at /home/jovyan/{run.name}.ipynb"
    return f"[I ServerApp] Kernel busy: cell {i} ran in {0.2 + 9 * noise:.1f}s"


def _summary(run: SimulatedRun) -> list[str]:
    steps = _total_steps(run)
    return [
        f"epoch {_epochs(run)}/{_epochs(run)} done: final loss {_loss(run, steps):.4f}; "
        f"checkpoint saved to /checkpoints/{run.name}/final.pt",
        f"training finished in {run.runtime:.0f}s",
    ]


def _failure(run: SimulatedRun) -> list[str]:
    step = _total_steps(run)
    return [
        f"ERROR: step {step} failed; shutting down",
        "Traceback (most recent call last):",
        '  File "/workspace/train.py", line 212, in <module>',
        "    main()",
        '  File "/workspace/train.py", line 187, in main',
        "    loss.backward()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a "
        "total capacity of 79.11 GiB of which 1.19 GiB is free.",
    ]


def _progress_lines(run: SimulatedRun) -> float:
    """How many periodic lines each replica writes in all (infinity: it runs on)."""
    if run.end is None:
        return math.inf
    return max(math.ceil(run.end / LINE_SECONDS) - 1, 0)


def _count(run: SimulatedRun, offset: float, *, inclusive: bool) -> int:
    """How many lines a replica wrote before `offset` seconds after its start (or at it)."""
    if offset < 0 or (offset == 0 and not inclusive):
        return 0
    periodic = math.floor(offset / LINE_SECONDS) if inclusive else math.ceil(offset / LINE_SECONDS)
    periodic -= 0 if inclusive else 1
    written = HEADER_LINES + int(min(_progress_lines(run), max(periodic, 0)))
    if run.end is not None and (offset >= run.end if inclusive else offset > run.end):
        written += len(run.footer())
    return written


def _line(run: SimulatedRun, replica: int, n: int) -> LogLine:
    """A replica's n-th line (from 0)."""
    stamped = True
    if n < HEADER_LINES:
        offset, text = 0.0, _header(run, replica)[n]
    elif n - HEADER_LINES < _progress_lines(run):
        i = n - HEADER_LINES + 1
        offset, text = float(i * LINE_SECONDS), _progress(run, replica, i)
    else:
        index = n - HEADER_LINES - int(_progress_lines(run))
        offset, text = run.end, run.footer()[index]
        stamped = not (run.fails and index > 0)  # a traceback is printed as it is
    at = run.started + timedelta(seconds=offset)
    return LogLine(at=at, replica=replica, text=f"[{_stamp(at)}] {text}" if stamped else text)


def simulated_lines(
    run: SimulatedRun,
    *,
    replicas: Iterable[int],
    until: datetime,
    since: datetime | None = None,
    after: datetime | None = None,
    tail: int | None = None,
) -> list[LogLine]:
    """The lines of these replicas written by `until`, at or after `since`, strictly after
    `after`, the last `tail` of them; oldest first (replicas in order at the same time)."""
    lines: list[LogLine] = []
    for replica in replicas:
        stop = _count(run, run.offset(until), inclusive=True)
        start = 0
        if since is not None:
            start = _count(run, run.offset(since), inclusive=False)
        if after is not None:
            start = max(start, _count(run, run.offset(after), inclusive=True))
        if tail is not None:
            start = max(start, stop - tail)
        lines += [_line(run, replica, n) for n in range(start, stop)]
    lines.sort(key=lambda line: (line.at, line.replica))
    return lines[-tail:] if tail is not None else lines
