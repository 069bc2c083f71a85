"""Migration 0029: a deployment's existing pools land in a `default` cluster of the backend its
settings name, and the simulator's rows so far are that cluster's, so that it keeps working."""

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("scheduling", "0028_tier_lost_work_credited")]
AFTER = [("scheduling", "0029_clusters")]

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def migrated(django_db_setup, django_db_blocker):
    """Apps at 0028 with a pool and a simulated object, migrated to 0029: the apps at 0029.
    Once for the module (migrating back and forth is what takes the time; the tests only
    read); afterwards the rows go and every migration is applied again."""
    with django_db_blocker.unblock():
        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        apps = executor.loader.project_state(BEFORE).apps
        gpu_class = apps.get_model("scheduling", "GpuClass").objects.create(
            name="L4", memory_gib=24
        )
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
        executor.loader.build_graph()
        executor.migrate(AFTER)
        try:
            yield executor.loader.project_state(AFTER).apps
        finally:
            executor = MigrationExecutor(connection)
            executor.migrate(executor.loader.graph.leaf_nodes())
            call_command("flush", verbosity=0, interactive=False)


def test_existing_pools_land_in_a_default_cluster_of_the_settings_backend(migrated, settings):
    pool = migrated.get_model("scheduling", "NodePool").objects.get(name="l4")
    assert (pool.cluster.name, pool.cluster.backend) == ("default", settings.PORTAL_CLUSTER)


def test_existing_simulated_objects_are_the_default_clusters(migrated):
    assert migrated.get_model("scheduling", "SimulatedObject").objects.get().cluster == "default"
