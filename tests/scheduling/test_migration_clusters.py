"""Migration 0029: a deployment's existing pools land in a `default` cluster of the backend its
settings name, and the simulator's rows so far are that cluster's, so that it keeps working."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("scheduling", "0028_tier_lost_work_credited")]
AFTER = [("scheduling", "0029_clusters")]


@pytest.fixture
def migrated_from_before(transactional_db):
    """Apps at 0028 with a pool and a simulated object; a callable migrating to 0029."""
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    gpu_class = apps.get_model("scheduling", "GpuClass").objects.create(name="L4", memory_gib=24)
    apps.get_model("scheduling", "NodePool").objects.create(
        name="l4", gpu_class=gpu_class, purpose="inference"
    )
    apps.get_model("scheduling", "SimulatedObject").objects.create(
        api_version="v1",
        kind="Namespace",
        name="acme-ai-dev",
        manifest={},
        created_at="2026-12-01T00:00Z",
    )

    def migrate():
        executor.loader.build_graph()
        executor.migrate(AFTER)
        return executor.loader.project_state(AFTER).apps

    yield migrate
    MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_existing_pools_land_in_a_default_cluster_of_the_settings_backend(
    migrated_from_before, settings
):
    apps = migrated_from_before()
    pool = apps.get_model("scheduling", "NodePool").objects.get(name="l4")
    assert (pool.cluster.name, pool.cluster.backend) == ("default", settings.PORTAL_CLUSTER)


def test_existing_simulated_objects_are_the_default_clusters(migrated_from_before):
    apps = migrated_from_before()
    assert apps.get_model("scheduling", "SimulatedObject").objects.get().cluster == "default"
