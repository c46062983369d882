"""Layering: flags > NAMI_* environment > agent.yaml > user config > preset > defaults, with sources; the
workspace is the project's folder wherever nami starts in it; the user config's tool files join the
project's; ``~`` and ``$VARS`` expand in paths."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from nami_yaml.app.toolset import build_registry
from nami_yaml.config.effective import env_scrub_rules, protected_env_names
from nami_yaml.config.prompt import system_prompt
from nami_yaml.config.settings import load_settings, mask
from nami_yaml.env_secrets import TELEMETRY_CREDENTIALS
from nami_yaml.errors import SpecError
from nami_yaml.project_request import ProjectRequest
from tests.helpers import write


def env_for(home: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), **extra}


def test_defaults_and_preset_without_any_file(temp_home: Path, workdir: Path) -> None:
    effective = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    assert effective.config_path is None
    assert effective.get("model.provider") == "deepseek"
    assert effective.get("model.name") == "deepseek-chat"
    assert effective.sources["model.name"] == "preset deepseek"
    assert effective.get("limits.max_steps") == 50
    assert effective.sources["limits.max_steps"] == "default"
    assert effective.get("no.such.key", "fallback") == "fallback"


def test_user_config_is_layered_under_agent_yaml(temp_home: Path, workdir: Path) -> None:
    user = write(temp_home / ".config" / "nami" / "config.yaml",
                 "model: {name: user-model, temperature: 0.7}\nlimits: {max_steps: 7}\n")
    agent = write(workdir / "agent.yaml", "model: {name: project-model}\n")
    effective = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    assert effective.config_path == agent
    assert effective.get("model.name") == "project-model"
    assert effective.sources["model.name"] == str(agent)
    assert effective.get("model.temperature") == 0.7
    assert effective.sources["model.temperature"] == str(user)
    assert effective.get("limits.max_steps") == 7
    assert effective.get("limits.max_output") == 50_000
    assert [f.path for f in effective.files] == [user, agent]
    ignoring_user = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir, user_config=False))
    assert ignoring_user.get("limits.max_steps") == 50


def test_environment_overrides_the_file_and_flags_override_both(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "model: {name: from-file, base_url: 'http://file.example/v1'}\n")
    env = env_for(temp_home, NAMI_MODEL="from-env", NAMI_BASE_URL="http://env.example/v1")
    effective = load_settings(ProjectRequest(env=env, cwd=workdir))
    assert (effective.get("model.name"), effective.sources["model.name"]) == ("from-env", "$NAMI_MODEL")
    assert effective.get("model.base_url") == "http://env.example/v1"
    flagged = load_settings(ProjectRequest(env=env, cwd=workdir, flags={"model.name": "from-flag", "model.base_url": None}))
    assert (flagged.get("model.name"), flagged.sources["model.name"]) == ("from-flag", "command line")
    assert flagged.get("model.base_url") == "http://env.example/v1"


def test_explicit_config_and_nami_config(temp_home: Path, workdir: Path, tmp_path: Path) -> None:
    write(workdir / "agent.yaml", "limits: {max_steps: 1}\n")
    other = write(tmp_path / "other.yaml", "limits: {max_steps: 2}\n")
    third = write(tmp_path / "third.yaml", "limits: {max_steps: 3}\n")
    env = env_for(temp_home, NAMI_CONFIG=str(third))
    assert load_settings(ProjectRequest(config=str(other), env=env, cwd=workdir)).get("limits.max_steps") == 2
    assert load_settings(ProjectRequest(env=env, cwd=workdir)).get("limits.max_steps") == 3
    assert load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir)).get("limits.max_steps") == 1


def test_bad_user_config_is_reported_too(temp_home: Path, workdir: Path) -> None:
    write(temp_home / ".config" / "nami" / "config.yaml", "limits: {max_stepz: 3}\n")
    with pytest.raises(SpecError) as info:
        load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    (problem,) = info.value.problems
    assert problem.file.endswith("config.yaml")
    assert problem.message == "unknown key 'max_stepz'; did you mean 'max_steps'?"


@pytest.mark.parametrize(("extra", "key", "source"), [
    # The default endpoint is DeepSeek's: an OpenAI key is not sent there.
    ({"OPENAI_API_KEY": "sk-openai"}, None, "unset"),
    ({"OPENAI_API_KEY": "sk-openai", "OPENAI_BASE_URL": "http://llm.local/v1"}, "sk-openai", "$OPENAI_API_KEY"),
    ({"OPENAI_API_KEY": "sk-openai", "DEEPSEEK_API_KEY": "sk-deep"}, "sk-deep", "$DEEPSEEK_API_KEY"),
    ({"NAMI_API_KEY": "sk-nami", "DEEPSEEK_API_KEY": "sk-deep"}, "sk-nami", "$NAMI_API_KEY"),
    ({}, None, "unset"),
])
def test_api_key_lookup(temp_home: Path, workdir: Path, extra: dict[str, str], key: str | None, source: str) -> None:
    effective = load_settings(ProjectRequest(env=env_for(temp_home, **extra), cwd=workdir))
    assert (effective.api_key, effective.api_key_source) == (key, source)


def test_local_provider_needs_no_key(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "model: {provider: ollama}\n")
    effective = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    assert effective.get("model.base_url") == "http://localhost:11434/v1"
    assert (effective.api_key, effective.api_key_source) == ("ollama", "not needed (local server)")
    assert effective.get("model.quirks")["null_content_as_empty"] is True


def test_openai_base_url_switches_to_a_custom_provider(temp_home: Path, workdir: Path) -> None:
    effective = load_settings(ProjectRequest(env=env_for(temp_home, OPENAI_BASE_URL="http://127.0.0.1:9/v1"), cwd=workdir))
    assert effective.get("model.base_url") == "http://127.0.0.1:9/v1"
    assert effective.get("model.provider") == "custom"


def test_protected_names_cover_the_model_key(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "model: {api_key_env: ACME_KEY}\n")
    effective = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    # Every provider's key variable too: a project pointing api_key_env elsewhere must not free the real key.
    # And a trace collector's credentials (telemetry): the exporter reads them, no tool ever does.
    assert protected_env_names(effective) == {"NAMI_API_KEY", "OPENAI_API_KEY", "ACME_KEY", "DEEPSEEK_API_KEY",
                                              *TELEMETRY_CREDENTIALS}
    assert {"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} <= TELEMETRY_CREDENTIALS


def test_where_points_into_the_file_that_set_a_value(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "# comment\nlimits:\n  max_steps: 9\n")
    effective = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    assert effective.where("limits", "max_steps") == "agent.yaml:3:14: $.limits.max_steps"
    assert effective.where("limits", "max_output") == "$.limits.max_output"


def test_mask() -> None:
    assert mask(None) == "(unset)"
    assert mask("short") == "***"
    assert mask("sk-1234567890") == "sk-…90"


def test_env_scrub_patterns_add_up_across_config_files(temp_home: Path, workdir: Path) -> None:
    """The user's patterns stay whatever a project's agent.yaml says: files only ever add scrubbing."""
    write(temp_home / ".config" / "nami" / "config.yaml", "env_scrub: {names: ['ACME_*'], values: ['xoxb-*']}\n")
    write(workdir / "agent.yaml", "env_scrub: {names: ['*_DSN']}\n")
    effective = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    scrub = env_scrub_rules(effective)
    assert scrub.names == ("ACME_*", "*_DSN") and scrub.values == ("xoxb-*",)
    assert effective.get("env_scrub") == {"names": ["ACME_*", "*_DSN"], "values": ["xoxb-*"]}
    write(workdir / "agent.yaml", "env_scrub: {names: [], values: []}\n")
    assert env_scrub_rules(load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))).names == ("ACME_*",)


def test_env_scrub_is_checked_by_the_schema(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", "env_scrub: {nmes: [X]}\n")
    with pytest.raises(SpecError, match="unknown key 'nmes'; did you mean 'names'"):
        load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))


def test_the_workspace_defaults_to_the_folder_of_a_found_or_named_agent_yaml(temp_home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "agent.yaml", "{}\n")
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    found = load_settings(ProjectRequest(env=env_for(temp_home), cwd=deep))
    assert found.get("workspace") == str(project)
    assert found.sources["workspace"] == "default: the folder of agent.yaml"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    named = load_settings(ProjectRequest(config=str(project / "agent.yaml"), env=env_for(temp_home), cwd=elsewhere))
    assert named.get("workspace") == str(project)
    none = load_settings(ProjectRequest(env=env_for(temp_home), cwd=elsewhere))
    assert (none.get("workspace"), none.sources["workspace"]) == (str(elsewhere), "default: the current folder")
    write(project / "agent.yaml", "workspace: src\n")
    chosen = load_settings(ProjectRequest(env=env_for(temp_home), cwd=deep))
    assert (chosen.get("workspace"), chosen.sources["workspace"]) == (str(project / "src"), str(project / "agent.yaml"))


def test_the_prompt_names_the_current_folder_relative_to_the_workspace(temp_home: Path, tmp_path: Path) -> None:
    effective = load_settings(ProjectRequest(env=env_for(temp_home), cwd=tmp_path))
    day = datetime.date(2025, 1, 2)
    (tmp_path / "a" / "b").mkdir(parents=True)
    at_root = system_prompt(effective, tmp_path, day, cwd=tmp_path)
    assert at_root.endswith(f"Workspace (tool paths are relative to it): {tmp_path}\nToday's date: 2025-01-02")
    inside = system_prompt(effective, tmp_path, day, cwd=tmp_path / "a" / "b")
    assert inside.endswith(f"Workspace (tool paths are relative to it): {tmp_path}\nCurrent folder: a/b (relative to the workspace)\n"
                           "Today's date: 2025-01-02")
    assert system_prompt(effective, tmp_path, day, cwd=tmp_path / "a" / "b") == inside  # byte-stable
    outside = system_prompt(effective, tmp_path / "a", day, cwd=tmp_path)
    assert f"Current folder: {tmp_path} (outside the workspace)\n" in outside


def test_user_config_tool_files_join_the_projects(temp_home: Path, workdir: Path) -> None:
    team = temp_home / "team-tools"
    write(team / "logs.yaml", "name: team_logs\ndescription: d\ncommand: [echo]\n")
    user = write(temp_home / ".config" / "nami" / "config.yaml", "tools: {builtin: [], files: ['~/team-tools']}\n")
    project = write(workdir / "agent.yaml", "tools: {files: [tools/]}\n")
    write(workdir / "tools" / "deploy.yaml", "name: deploy\ndescription: d\ncommand: [echo]\n")
    effective = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    assert effective.get("tools.files") == [str(team), str(workdir / "tools")]
    assert effective.sources["tools.files"] == f"{user} + {project}"
    assert build_registry(effective).names() == ["team_logs", "deploy"]


def test_a_tool_name_in_both_is_an_error_naming_both_files(temp_home: Path, workdir: Path) -> None:
    write(temp_home / "lib" / "deploy.yaml", "name: deploy\ndescription: d\ncommand: [echo]\n")
    write(temp_home / ".config" / "nami" / "config.yaml", "tools: {builtin: [], files: ['$HOME/lib']}\n")
    write(workdir / "agent.yaml", "tools: {files: [tools/]}\n")
    write(workdir / "tools" / "deploy.yaml", "name: deploy\ndescription: d\ncommand: [echo, other]\n")
    with pytest.raises(SpecError) as failure:
        build_registry(load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir)))
    (problem,) = failure.value.problems
    assert problem.file.endswith("tools/deploy.yaml")
    assert problem.message.startswith("duplicate tool name 'deploy': also defined at ")
    assert problem.message.endswith("home/lib/deploy.yaml:1:7")  # the user's library, shown relative


def test_variables_expand_in_paths_and_an_unset_one_is_named(temp_home: Path, workdir: Path) -> None:
    write(temp_home / "shared" / "t.yaml", "name: shared_tool\ndescription: d\ncommand: [echo]\n")
    write(workdir / "agent.yaml", "tools:\n  builtin: []\n  files: ['${TEAM}/t.yaml', $TEAM]\nworkspace: $WS\n")
    (workdir / "ws").mkdir()
    effective = load_settings(ProjectRequest(env=env_for(temp_home, TEAM=str(temp_home / "shared"), WS="ws"), cwd=workdir))
    assert effective.get("workspace") == str(workdir / "ws")
    assert build_registry(effective).names() == ["shared_tool"]
    with pytest.raises(SpecError) as failure:
        load_settings(ProjectRequest(env=env_for(temp_home, WS="ws"), cwd=workdir))
    assert [str(p) for p in failure.value.problems] == [
        "agent.yaml:3:11: $.tools.files[0]: $TEAM is not set (in '${TEAM}/t.yaml')",
        f"agent.yaml:3:11: $.tools.files[0]: '${{TEAM}}/t.yaml' matches no tool file (relative to {workdir})",
        "agent.yaml:3:29: $.tools.files[1]: $TEAM is not set (in '$TEAM')",
        f"agent.yaml:3:29: $.tools.files[1]: '$TEAM' matches no tool file (relative to {workdir})",
    ]


def test_an_answer_schema_is_one_value_never_merged(temp_home: Path, workdir: Path) -> None:
    write(temp_home / ".config" / "nami" / "config.yaml",
          "answer_schema: {type: object, required: [status], properties: {status: {type: string}}}\n")
    mine = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    assert mine.get("answer_schema")["required"] == ["status"]
    write(workdir / "agent.yaml", "answer_schema: {type: array, items: {type: string}}\nlimits: {schema_retries: 0}\n")
    effective = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    assert effective.get("answer_schema") == {"type": "array", "items": {"type": "string"}}  # the user's is gone
    assert effective.sources["answer_schema"] == str(workdir / "agent.yaml")
    assert effective.get("limits.schema_retries") == 0
    assert load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir, user_config=False)).get("limits.schema_retries") == 0


@pytest.mark.parametrize("agent_yaml", ["", "model: {provider: deepseek, name: deepseek-chat}\n"])
def test_a_local_base_url_is_not_deepseek(temp_home: Path, workdir: Path, agent_yaml: str) -> None:
    # $NAMI_BASE_URL at a llama.cpp server, with or without `nami init`'s DeepSeek section: none of what
    # DeepSeek's preset knows of its own host applies there.
    write(workdir / "agent.yaml", agent_yaml)
    env = env_for(temp_home, NAMI_BASE_URL="http://127.0.0.1:8080/v1", DEEPSEEK_API_KEY="sk-deepseek-secret")
    effective = load_settings(ProjectRequest(env=env, cwd=workdir))
    model = effective.model
    assert (model.provider, model.base_url) == ("custom", "http://127.0.0.1:8080/v1")
    assert effective.sources["model.provider"] == "$NAMI_BASE_URL: not the deepseek endpoint"
    assert model.pricing is None and model.context_window is None  # no dollar cost, no 128k window assumed
    assert model.api_key_env is None and effective.api_key != "sk-deepseek-secret"  # its key stays home
    assert effective.get("model.quirks") == {}  # not DeepSeek's json_object
    assert model.name == "deepseek-chat"  # the name still goes (a local server answers any)


def test_a_remote_endpoint_keeps_the_chosen_providers_protocol(temp_home: Path, workdir: Path) -> None:
    # A proxy of OpenAI's API: its quirks still describe what it speaks; its prices and window are not known.
    write(workdir / "agent.yaml", "model: {provider: openai, base_url: 'https://llm-proxy.example.com/v1'}\n")
    effective = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    assert effective.model.provider == "custom"
    assert effective.model.pricing is None and effective.model.context_window is None
    assert effective.get("model.quirks")["max_tokens_field"] == "max_completion_tokens"


def test_a_local_proxy_chosen_with_its_provider_keeps_the_protocol(temp_home: Path, workdir: Path) -> None:
    # provider and base_url in one file: OpenAI's API through a proxy on localhost (LiteLLM, say).
    write(workdir / "agent.yaml", "model: {provider: openai, base_url: 'http://127.0.0.1:4000/v1'}\n")
    effective = load_settings(ProjectRequest(env=env_for(temp_home), cwd=workdir))
    assert effective.model.provider == "custom" and effective.model.pricing is None
    assert effective.get("model.quirks")["response_format"] == "json_schema"


def test_the_providers_own_endpoint_keeps_its_preset(temp_home: Path, workdir: Path) -> None:
    env = env_for(temp_home, NAMI_BASE_URL="https://api.deepseek.com/v1")
    effective = load_settings(ProjectRequest(env=env, cwd=workdir))
    assert effective.model.provider == "deepseek" and effective.model.context_window == 128_000
    assert effective.model.pricing is not None
