"""A model that cannot be reached for want of a key is a configuration error found first, before the trust
question; but where an untrusted agent.yaml itself chooses where the key goes, it is reviewed first."""

from __future__ import annotations

from pathlib import Path

import pytest

from nami_yaml import Agent
from nami_yaml.app import TrustRequest, UntrustedProject
from nami_yaml.errors import ConfigError
from tests.helpers import run_nami, write


def asked_into(asked: list[TrustRequest], answer: bool = True):  # noqa: ANN201
    def trust(request: TrustRequest) -> bool:
        asked.append(request)
        return answer
    return trust


def test_no_key_is_said_before_trust_is_asked(workdir: Path) -> None:
    write(workdir / "agent.yaml", "model: {provider: deepseek, name: deepseek-chat}\n")  # as `nami init` writes it
    asked: list[TrustRequest] = []
    with pytest.raises(ConfigError) as caught:
        Agent.from_config(trust=asked_into(asked))
    assert "no API key for https://api.deepseek.com: export DEEPSEEK_API_KEY=..." in str(caught.value)
    assert asked == []


def test_nami_run_without_a_key_exits_2_before_any_trust(workdir: Path) -> None:
    write(workdir / "agent.yaml", "model: {provider: deepseek}\n")
    result = run_nami(None, "run", "hi", cwd=workdir)
    assert result.returncode == 2, result.stderr
    assert "no API key" in result.stderr and "not trusted" not in result.stderr


def test_a_local_endpoint_the_untrusted_file_chooses_needs_no_key(workdir: Path) -> None:
    write(workdir / "agent.yaml", "model: {provider: ollama, name: qwen2.5-coder:7b}\n")
    asked: list[TrustRequest] = []
    with Agent.from_config(trust=asked_into(asked)) as agent:
        assert agent.model.base_url == "http://localhost:11434/v1"
    assert len(asked) == 1


def test_an_endpoint_the_untrusted_file_chooses_is_reviewed_before_its_key_is_asked_for(workdir: Path) -> None:
    write(workdir / "agent.yaml", "model: {provider: custom, name: m, base_url: 'https://llm.example.com/v1', "
                                  "api_key_env: TEAM_LLM_KEY}\n")
    asked: list[TrustRequest] = []
    with pytest.raises(UntrustedProject):
        Agent.from_config(trust=asked_into(asked, answer=False))
    assert len(asked) == 1  # not told to export TEAM_LLM_KEY for a file nobody has reviewed
    assert any("sends the API key from $TEAM_LLM_KEY (unset) to https://llm.example.com/v1" in line
               for line in asked[0].summary)
    with pytest.raises(ConfigError) as caught:  # once trusted, the same check
        Agent.from_config(trust=asked_into(asked, answer=True))
    assert "no API key for https://llm.example.com/v1: export TEAM_LLM_KEY=..." in str(caught.value)


def test_a_key_from_the_environment_passes(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(workdir / "agent.yaml", "model: {provider: deepseek}\n")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    asked: list[TrustRequest] = []
    with Agent.from_config(trust=asked_into(asked)) as agent:
        assert agent.model.base_url == "https://api.deepseek.com"
    assert len(asked) == 1
