"""Capacity views: what fits now per pool, and fragmentation as the FGD paper defines it."""

from scheduling.engine import TaskType, fragmentation, pool_capacity, typical_workload

from .builders import node

ONE_GPU = ((TaskType(cpu_milli=0, gpus=1, gpu_milli=1000), 1.0),)


def test_schedulable_counts_requests_of_each_size():
    views = pool_capacity(nodes=[node("a", free=[1000] * 5 + [0] * 3), node("b", gpus=8)])
    assert views[0].schedulable == {1: 13, 2: 6, 4: 3, 8: 1}


def test_cordoned_nodes_are_not_schedulable():
    views = pool_capacity(nodes=[node("a", cordoned=True)])
    assert views[0].schedulable[1] == 0


def test_a_cordoned_nodes_idle_gpus_are_idle_but_not_schedulable_idle():
    [view] = pool_capacity(nodes=[node("a", cordoned=True), node("b")])
    assert (view.gpus_idle, view.gpus_idle_schedulable) == (16, 8)


def test_capacity_is_reported_per_pool_and_class():
    views = pool_capacity(nodes=[node("a", pool="x"), node("b", pool="y", gpu_class="L4", gpus=1)])
    assert [(v.pool, v.gpu_class, v.gpus_total) for v in views] == [
        ("x", "H100-80GB", 8),
        ("y", "L4", 1),
    ]


def test_partial_gpus_are_fragmented_for_whole_gpu_work():
    view = fragmentation(nodes=[node("a", free=[500, 1000])], workload=ONE_GPU)
    assert (view.fragmented_gpu_milli, view.idle_gpu_milli) == (500, 1500)


def test_a_node_too_small_for_the_work_is_all_fragment():
    two = ((TaskType(cpu_milli=0, gpus=2, gpu_milli=1000), 1.0),)
    view = fragmentation(nodes=[node("a", free=[1000, 0])], workload=two)
    assert view.rate == 1.0


def test_a_node_short_of_cpu_is_all_fragment():
    hungry = ((TaskType(cpu_milli=8000, gpus=1, gpu_milli=1000), 1.0),)
    view = fragmentation(nodes=[node("a", free=[1000], cpu=1000)], workload=hungry)
    assert view.rate == 1.0


def test_typical_workload_keeps_the_popular_types_covering_95_percent():
    common, rare = TaskType(1000, 1, 1000), TaskType(2000, 2, 1000)
    assert typical_workload([common] * 96 + [rare] * 4) == ((common, 1.0),)
