"""The Dockerfile and the compose file, read as text and YAML, so the suite needs no Docker
engine (docs/operators/deployment.md says where the image was built and run, and how)."""

import re

import yaml

from .conftest import DEPLOY

DOCKERFILE = (DEPLOY / "Dockerfile").read_text()
COMPOSE = yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of each instruction, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", text)
    lines = [line.strip() for line in joined.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in lines
        if line and not line.startswith("#")
    ]


def stages() -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for instruction in instructions(DOCKERFILE):
        if instruction[0] == "FROM":
            found.append([])
        found[-1].append(instruction)
    return found


def test_the_image_is_built_in_two_stages_the_runtime_taking_only_the_environment():
    builder, runtime = stages()
    assert builder[0][1].endswith("AS builder")
    assert any(i == "RUN" and "python -m venv /opt/venv" in args for i, args in builder)
    copies = [args for i, args in runtime if i == "COPY" and "--from=" in args]
    assert copies == ["--from=builder /opt/venv /opt/venv"]
    assert not any(i == "RUN" and "pip install" in args for i, args in runtime)


def test_the_runtime_runs_as_a_non_root_user():
    runtime = stages()[-1]
    users = [args for i, args in runtime if i == "USER"]
    assert users, "no USER: the image would run as root"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    assert [i for i, _ in runtime].index("USER") > max(
        n for n, (i, _) in enumerate(runtime) if i == "RUN"
    ), "a RUN after USER would need write access to the image"


def test_static_files_are_collected_at_build_with_the_production_settings():
    runtime = stages()[-1]
    assert any(i == "RUN" and "manage.py collectstatic --no-input" in a for i, a in runtime)
    env = " ".join(a for i, a in runtime if i == "ENV")
    assert "DJANGO_SETTINGS_MODULE=portal.settings.production" in env


def test_gunicorn_serves_the_web_process_by_default():
    [cmd] = [args for i, args in stages()[-1] if i == "CMD"]
    assert cmd.startswith('["gunicorn", "portal.wsgi:application"')


def test_no_secret_is_baked_into_the_image():
    for instruction, args in instructions(DOCKERFILE):
        if instruction in {"ENV", "ARG", "LABEL"}:
            assert not re.search(r"SECRET|PASSWORD|TOKEN|KEY", args, re.IGNORECASE), args
    # The build's key is made in the RUN that uses it and never written to a layer.
    assert "secrets.token_urlsafe" in DOCKERFILE


def test_the_image_copies_what_the_settings_read_from_the_source_tree():
    copied = {args.split()[0] for i, args in stages()[-1] if i == "COPY" and "--from" not in args}
    root = DEPLOY.parent
    assert copied >= {
        "manage.py",
        "portal",
        "tenants",
        "scheduling",
        "billing",
        "webhooks",
        "templates",
    }
    assert all((root / path).exists() for path in copied)
    assert "deploy/clusters" in copied  # PORTAL_SIMULATED_CLUSTER's default


PORTAL_SERVICES = {"migrate", "web", "worker-cycle", "worker", "beat"}


def test_compose_runs_web_workers_beat_postgresql_and_redis():
    assert set(COMPOSE["services"]) == PORTAL_SERVICES | {"postgres", "redis"}
    assert COMPOSE["services"]["postgres"]["image"].startswith("postgres:")
    assert COMPOSE["services"]["redis"]["image"].startswith("redis:")


def test_every_long_running_service_has_a_healthcheck():
    for name, service in COMPOSE["services"].items():
        if name != "migrate":
            assert service["healthcheck"]["test"], name


def test_the_portal_starts_after_migrations_on_a_healthy_database_and_broker():
    services = COMPOSE["services"]
    assert services["migrate"]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for name in PORTAL_SERVICES - {"migrate"}:
        assert services[name]["depends_on"] == {
            "migrate": {"condition": "service_completed_successfully"},
            "redis": {"condition": "service_healthy"},
        }


def test_every_portal_service_uses_the_one_image_read_only():
    for name in PORTAL_SERVICES:
        service = COMPOSE["services"][name]
        assert service["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
        assert service["read_only"] is True
        assert service["environment"]["SECRET_KEY"].startswith("${SECRET_KEY:?")


def test_compose_names_no_secret_value_of_its_own():
    for name in PORTAL_SERVICES:
        environment = COMPOSE["services"][name]["environment"]
        for key in ("SECRET_KEY", "PORTAL_METRICS_TOKEN"):
            assert environment[key].startswith("${"), key


def test_there_is_one_beat():
    beats = [s for s in COMPOSE["services"].values() if "beat" in s.get("command", [])]
    assert len(beats) == 1 and "deploy" not in beats[0]
