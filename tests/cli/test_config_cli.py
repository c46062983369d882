"""``nami config``: every effective value with where it came from; the key is never shown whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nami_yaml.cli.main import cli


def config_json(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(cli, ["config", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_sources_follow_precedence(workdir: Path, temp_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = temp_home / ".config" / "nami" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text("model:\n  temperature: 0.7\n  name: from-user\nlimits:\n  max_steps: 9\n")
    (workdir / "agent.yaml").write_text("model:\n  name: from-project\nlimits:\n  max_output: 1000\n")
    data = config_json(monkeypatch, NAMI_MODEL="from-env", DEEPSEEK_API_KEY="sk-0123456789abcdef")
    values = data["values"]
    assert values["model.name"] == {"value": "from-env", "source": "$NAMI_MODEL"}
    assert values["model.temperature"] == {"value": 0.7, "source": str(user)}
    assert values["limits.max_steps"] == {"value": 9, "source": str(user)}
    assert values["limits.max_output"] == {"value": 1000, "source": str(workdir / "agent.yaml")}
    assert values["model.base_url"] == {"value": "https://api.deepseek.com", "source": "preset deepseek"}
    assert values["limits.max_parallel_tools"]["source"] == "default"
    assert data["config_file"] == str(workdir / "agent.yaml")
    key = values["model.api_key"]
    assert key["source"] == "$DEEPSEEK_API_KEY"
    assert "0123456789abcdef" not in json.dumps(data)


def test_openai_variables_are_the_fallback(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = config_json(monkeypatch, OPENAI_API_KEY="sk-openai-fallback-key", OPENAI_BASE_URL="http://local:1/v1")
    values = data["values"]
    assert values["model.base_url"] == {"value": "http://local:1/v1", "source": "$OPENAI_BASE_URL"}
    assert values["model.api_key"]["source"] == "$OPENAI_API_KEY"
    (workdir / "agent.yaml").write_text("model:\n  base_url: https://api.example.com/v1\n")
    values = config_json(monkeypatch)["values"]
    assert values["model.base_url"]["value"] == "https://api.example.com/v1"


def test_nami_api_key_wins_and_is_masked(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMI_API_KEY", "sk-nami-secret-1234")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-secret-5678")
    result = CliRunner().invoke(cli, ["config"])
    assert result.exit_code == 0
    assert "sk-nami-secret-1234" not in result.output and "deepseek-secret" not in result.output
    assert "# $NAMI_API_KEY" in result.output


def test_provider_preset(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workdir / "agent.yaml").write_text("model:\n  provider: ollama\n")
    values = config_json(monkeypatch)["values"]
    assert values["model.base_url"] == {"value": "http://localhost:11434/v1", "source": "preset ollama"}
    assert values["model.api_key"]["source"] == "not needed (local server)"


def test_openai_key_is_never_sent_to_another_providers_endpoint(workdir: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    values = config_json(monkeypatch, OPENAI_API_KEY="sk-openai-only-key")["values"]
    assert values["model.base_url"]["value"] == "https://api.deepseek.com"
    assert values["model.api_key"] == {"value": "(unset)", "source": "unset"}
    (workdir / "agent.yaml").write_text("model:\n  provider: openai\n")
    assert config_json(monkeypatch)["values"]["model.api_key"]["source"] == "$OPENAI_API_KEY"


@pytest.mark.parametrize("url", ["https://api.deepseek.com/", "https://API.deepseek.com./v1"])
def test_spellings_of_a_providers_host_still_withhold_the_openai_key(workdir: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    url: str) -> None:
    (workdir / "agent.yaml").write_text(f"model:\n  base_url: {url}\n")
    values = config_json(monkeypatch, OPENAI_API_KEY="sk-openai-only-key")["values"]
    assert values["model.api_key"] == {"value": "(unset)", "source": "unset"}
