"""The library's ``sandbox:`` keys, run: each CLI's stub sees the files its tool declares and reaches the
network only where the tool declares it; what no tool declares stays hidden."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from library.conftest import LibraryRunner, Stubs, all_library_tools
from tests.local_http import QuietHandler, serving
from tests.sandboxing import need_bwrap

NETWORK = {"kubectl", "helm", "terraform_plan", "terraform_apply", "terraform_show", "http_probe"}


class Ok(QuietHandler):
    def do_GET(self) -> None:
        self.reply(200, b"ok")


@pytest.fixture
def home_files(temp_home: Path) -> Path:
    for relative, text in ((".kube/config", "clusters: [prod]\n"), (".ssh/id_ed25519", "SSH-KEY\n"),
                           (".aws/credentials", "[default]\n"), (".docker/config.json", '{"auths": {}}')):
        (temp_home / relative).parent.mkdir(parents=True, exist_ok=True)
        (temp_home / relative).write_text(text)
    return temp_home


def peeking(library: LibraryRunner, url: str, *paths: str) -> LibraryRunner:
    ctx = library.executor.ctx
    env = {**ctx.host_env, "STUB_PEEK": os.pathsep.join(paths), "STUB_CONNECT": url}
    return LibraryRunner(replace(ctx, host_env=env))


def test_the_network_is_declared_where_the_cli_needs_it() -> None:
    declared = {tool.name for tool in all_library_tools()
                if getattr(tool.runner, "options", None) is not None and tool.runner.options.sandbox.network}
    assert declared and all(any(name.startswith(group) for group in NETWORK) for name in declared)
    assert {name for name in declared if name.startswith("kubectl_")} == {
        tool.name for tool in all_library_tools() if tool.name.startswith("kubectl_")}


def test_kubectl_reads_its_kubeconfig_and_reaches_the_cluster_and_nothing_else(
        library: LibraryRunner, stubs: Stubs, home_files: Path) -> None:
    need_bwrap()
    with serving(Ok) as url:
        result = peeking(library, url, "~/.kube/config", "~/.ssh/id_ed25519", "~/.aws/credentials")(
            "kubectl_get", kind="pods")
    assert result.ok, result.content
    call = stubs.only_call()
    assert call.peek["~/.kube/config"] == "clusters: [prod]\n"
    assert call.peek["~/.aws/credentials"] == "[default]\n"  # exec plugins (aws eks get-token) read it
    assert not call.peek["~/.ssh/id_ed25519"]
    assert call.reached is True


def test_a_tool_declaring_nothing_reaches_nothing(library: LibraryRunner, stubs: Stubs, home_files: Path) -> None:
    need_bwrap()
    with serving(Ok) as url:
        # terraform fmt: a tool declaring nothing (jq_filter declares host_env: false, so its stub would not
        # even be told what to peek at).
        peeking(library, url, "~/.kube/config", "~/.docker/config.json")("terraform_fmt", dir=".")
    call = stubs.only_call()
    assert not call.peek["~/.kube/config"] and not call.peek["~/.docker/config.json"]
    assert call.reached is False


def test_terraform_plan_reads_cloud_credentials_and_fmt_does_not(library: LibraryRunner, stubs: Stubs,
                                                                  home_files: Path, workdir: Path) -> None:
    need_bwrap()
    with serving(Ok) as url:
        runner = peeking(library, url, "~/.aws/credentials")
        runner("terraform_plan", dir=".")
        runner("terraform_fmt", dir=".")
    plan, fmt = stubs.calls()
    assert plan.peek["~/.aws/credentials"] == "[default]\n" and plan.reached is True
    assert not fmt.peek["~/.aws/credentials"] and fmt.reached is False


def test_the_process_list_is_the_hosts(library: LibraryRunner, stubs: Stubs) -> None:
    need_bwrap()
    host_init = Path("/proc/1/cmdline").read_text(errors="replace")
    peeking(library, "", "/proc/1/cmdline")("system_processes")
    assert stubs.only_call().peek["/proc/1/cmdline"] == host_init


def test_a_targets_kubeconfig_is_the_one_kubectl_reads(stubs: Stubs, home_files: Path, workdir: Path) -> None:
    """`reads: [$KUBECONFIG]` is read from the environment the call runs in: on target prod, prod's
    kubeconfig is shown to kubectl and dev's stays hidden (~/.kube is hidden by default)."""
    from nami_yaml.runtime import RuntimeContext, Target, TargetSet
    from tests.library.conftest import LibraryRunner as Runner

    need_bwrap()
    for name in ("prod", "dev"):
        (home_files / ".kube" / f"{name}.yaml").write_text(f"clusters: [{name}]\n")
    targets = TargetSet((Target("dev", {"KUBECONFIG": str(home_files / ".kube" / "dev.yaml")}),
                         Target("prod", {"KUBECONFIG": str(home_files / ".kube" / "prod.yaml")})))
    ctx = RuntimeContext(workspace=workdir, host_env={**os.environ, "STUB_PEEK": "~/.kube/prod.yaml:~/.kube/dev.yaml"},
                         spill_dir=home_files / "spill", sandbox=stubs.sandbox())
    result = Runner(ctx, targets)("kubectl_get", kind="pods", target="prod")
    assert result.ok, result.content
    call = stubs.only_call()
    assert call.peek["~/.kube/prod.yaml"] == "clusters: [prod]\n"
    assert not call.peek["~/.kube/dev.yaml"]
