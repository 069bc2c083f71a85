"""Fragmentation counts what the paper's simulator counts (all but its "Q3 satisfied" part)."""

from scheduling.engine import TaskType, fragmentation
from scheduling.engine.fragmentation import rare_workload

from .builders import node

CPU_ONLY = TaskType(cpu_milli=1000, gpus=0, gpu_milli=0)
ONE_GPU = TaskType(cpu_milli=1000, gpus=1, gpu_milli=1000)


def test_cpu_only_work_counts_every_idle_gpu_as_fragment():
    view = fragmentation(nodes=[node("a", free=[1000, 1000])], workload=((CPU_ONLY, 1.0),))
    assert view.fragmented_gpu_milli == 2000


def test_work_limited_to_another_gpu_class_counts_every_idle_gpu_as_fragment():
    elsewhere = TaskType(cpu_milli=1000, gpus=1, gpu_milli=1000, gpu_classes=frozenset({"T4"}))
    view = fragmentation(nodes=[node("a", free=[1000, 500])], workload=((elsewhere, 1.0),))
    assert view.fragmented_gpu_milli == 1500


def test_the_workload_mix_weights_each_type_by_its_popularity():
    mix = ((CPU_ONLY, 0.25), (ONE_GPU, 0.75))
    view = fragmentation(nodes=[node("a", free=[1000, 500])], workload=mix)
    assert view.fragmented_gpu_milli == 0.25 * 1500 + 0.75 * 500


def test_rare_workload_keeps_the_types_past_the_coverage_with_their_share_of_all_tasks():
    assert rare_workload([ONE_GPU] * 96 + [CPU_ONLY] * 4) == ((CPU_ONLY, 0.04),)
