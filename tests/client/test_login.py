"""Logging in, contexts, and the environment's overrides."""

import stat

import pytest
import yaml

pytestmark = pytest.mark.django_db(transaction=True)


def config_of(config_home) -> dict:
    return yaml.safe_load((config_home / "gpuctl" / "config.yaml").read_text())


def test_login_stores_the_token_in_a_file_only_its_owner_may_read(logged_in, config_home, secret):
    path = config_home / "gpuctl" / "config.yaml"
    context = config_of(config_home)["contexts"]["acme"]
    assert (stat.S_IMODE(path.stat().st_mode), context["token"], context["url"]) == (
        0o600,
        secret,
        logged_in,
    )


def test_login_takes_the_tokens_organization_and_the_project_given(logged_in, config_home):
    config = config_of(config_home)
    assert (config["current"], config["contexts"]["acme"]["organization"]) == ("acme", "acme")
    assert config["contexts"]["acme"]["project"] == "ai-dev"


def test_login_asks_for_the_token_when_none_is_given(gpuctl, live_server, secret, config_home):
    result = gpuctl("login", live_server.url, input=f"{secret}\n")
    assert result.exit_code == 0, result.output
    assert config_of(config_home)["contexts"]["acme"]["token"] == secret


def test_login_with_a_bad_token_exits_3_and_stores_nothing(gpuctl, live_server, demo, config_home):
    result = gpuctl("login", live_server.url, "--token", "not-a-token")
    assert (result.exit_code, (config_home / "gpuctl").exists()) == (3, False)
    assert "error:" in result.stderr


def test_a_command_before_any_login_exits_3_and_says_how_to_log_in(gpuctl):
    result = gpuctl("ls")
    assert (result.exit_code, "gpuctl login URL" in result.stderr) == (3, True)


def test_gpuctl_token_and_url_work_without_any_configuration(gpuctl, live_server, secret):
    result = gpuctl(
        "projects", "-o", "json", env={"GPUCTL_URL": live_server.url, "GPUCTL_TOKEN": secret}
    )
    assert result.exit_code == 0, result.output
    assert sorted(p["slug"] for p in yaml.safe_load(result.stdout)) == ["ai-dev", "ai-prod"]


def test_gpuctl_token_overrides_the_contexts_token(gpuctl, logged_in):
    result = gpuctl("projects", env={"GPUCTL_TOKEN": "revoked-or-wrong"})
    assert result.exit_code == 3


def test_a_second_context_is_listed_and_used_and_removed(gpuctl, logged_in, secret, config_home):
    gpuctl("login", logged_in, "--token", secret, "--context", "prod", "--project", "ai-prod")
    assert config_of(config_home)["current"] == "prod"
    listed = yaml.safe_load(gpuctl("context", "ls", "-o", "yaml").stdout)
    assert [(c["name"], c["current"], c["project"]) for c in listed] == [
        ("acme", False, "ai-dev"),
        ("prod", True, "ai-prod"),
    ]
    assert "token" not in listed[0]
    assert gpuctl("context", "use", "acme").exit_code == 0
    assert config_of(config_home)["current"] == "acme"
    assert gpuctl("context", "rm", "prod").exit_code == 0
    assert list(config_of(config_home)["contexts"]) == ["acme"]


def test_using_an_unknown_context_is_bad_usage(gpuctl, logged_in):
    assert gpuctl("context", "use", "nowhere").exit_code == 2


def test_context_set_changes_the_default_project(gpuctl, logged_in, config_home):
    assert gpuctl("context", "set", "--project", "ai-prod").exit_code == 0
    assert config_of(config_home)["contexts"]["acme"]["project"] == "ai-prod"
