"""agent.yaml's targets: read as values (``~`` expanded in env, ``${NAME}`` left for the call), checked
(default_target, names), project only, and pinned by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from nami_yaml.config.settings import load_settings
from nami_yaml.config.targets import project_targets
from nami_yaml.errors import ConfigError, SpecError
from nami_yaml.project_request import ProjectRequest
from nami_yaml.runtime import Target
from tests.helpers import write

TARGETS = """\
targets:
  dev: {env: {KUBECONFIG: ~/.kube/dev.yaml, TOKEN_FILE: "${HOME}/t", REPLICAS: 2, DEBUG: true}, vars: {context: dev-eu}}
  prod: {env: {KUBECONFIG: ~/.kube/prod.yaml}, vars: {context: prod-eu, port: 8443}}
"""


def settings(home: Path, cwd: Path):  # type: ignore[no-untyped-def]
    return load_settings(ProjectRequest(env={"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}, cwd=cwd))


def test_targets_are_values_with_home_expanded_and_host_references_left_for_the_call(temp_home: Path,
                                                                                   workdir: Path) -> None:
    write(workdir / "agent.yaml", TARGETS + "default_target: dev\n")
    targets = project_targets(settings(temp_home, workdir))
    assert targets.names() == ["dev", "prod"] and targets.default == "dev" and targets.pinned is None
    assert targets.get("dev") == Target("dev", {"KUBECONFIG": f"{temp_home}/.kube/dev.yaml", "TOKEN_FILE": "${HOME}/t",
                                                "REPLICAS": "2", "DEBUG": "true"}, {"context": "dev-eu"})
    assert targets.get("prod").vars == {"context": "prod-eu", "port": "8443"}  # type: ignore[union-attr]


def test_pinning_names_a_target_of_the_project(temp_home: Path, workdir: Path) -> None:
    write(workdir / "agent.yaml", TARGETS)
    assert project_targets(settings(temp_home, workdir), "prod").pinned == "prod"
    with pytest.raises(ConfigError, match=r"cannot run on target 'prd': no target is named so \(targets: dev, "
                                          r"prod\); did you mean 'prod'\?"):
        project_targets(settings(temp_home, workdir), "prd")
    write(workdir / "agent.yaml", "model: {name: m}\n")
    with pytest.raises(ConfigError, match="this project declares no targets"):
        project_targets(settings(temp_home, workdir), "prod")


@pytest.mark.parametrize(("text", "message"), [
    (TARGETS + "default_target: staging\n",
     "agent.yaml:4:17: $.default_target: no target is named 'staging' (targets: dev, prod)"),
    ("default_target: dev\n", "agent.yaml:1:1: $.default_target: default_target names a target, and there are no "
                              "targets: declare them under targets:"),
    ("targets: {-prod: {}}\n", "agent.yaml:1:10: $.targets: \"-prod\" must be 1 to 40 letters, digits, ., _ or -, "
                              "starting with a letter or digit"),
    ("targets: {prod: {vars: {Context: x}}}\n", "agent.yaml:1:24: $.targets.prod.vars: \"Context\" must be 1 to 40 "
                                               "lower-case letters, digits or _, starting with a letter"),
    ("targets: {prod: {kubeconfig: x}}\n", "agent.yaml:1:18: $.targets.prod.kubeconfig: unknown key 'kubeconfig'"),
])
def test_what_agent_yaml_cannot_say_about_targets(temp_home: Path, workdir: Path, text: str, message: str) -> None:
    write(workdir / "agent.yaml", text)
    with pytest.raises(SpecError) as raised:
        settings(temp_home, workdir)
    assert message in str(raised.value)


def test_the_user_config_cannot_declare_targets_or_policy_tests(temp_home: Path, workdir: Path) -> None:
    write(temp_home / ".config" / "nami" / "config.yaml", TARGETS + "policy_tests: []\n")
    with pytest.raises(SpecError) as raised:
        settings(temp_home, workdir)
    lines = str(raised.value).splitlines()
    assert lines[0].endswith("config.yaml:1:1: $.targets: targets belongs in a project's agent.yaml, not in the user "
                             "config: it would apply to every project")
    assert "$.policy_tests: policy_tests belongs in a project's agent.yaml" in lines[1]
