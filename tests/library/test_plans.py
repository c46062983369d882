"""The library's writes that have a plan use it (issue 43 item 4): terraform_apply plans into the call's plan
file, shows it and applies exactly that file; kubectl_apply shows kubectl diff (exit 1: differences). On stub
CLIs, and on the real ones where this machine has them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from nami_yaml.registry.executor import PreparedToolCall
from tests.library.conftest import LibraryRunner, Stubs, terraform_config
from tests.programs import needs

DIFF = "diff -u -N /tmp/LIVE/v1.ConfigMap.default.web /tmp/MERGED/v1.ConfigMap.default.web\n+  size: \"3\"\n"


def prepared(library: LibraryRunner, tool: str, **arguments: object) -> PreparedToolCall:
    call = library.executor.prepare(tool, json.dumps(arguments))
    assert isinstance(call, PreparedToolCall), call
    return call


def test_kubectl_apply_shows_kubectl_diff_of_the_same_files(library: LibraryRunner, stubs: Stubs) -> None:
    stubs.add("kubectl", stdout=DIFF, exit_code=1)  # differences: a plan, not a failure
    call = prepared(library, "kubectl_apply", paths=["k8s/"], namespace="shop")
    step = call.plan_step
    assert step is not None and step.file is None
    outcome = step.run()
    assert outcome.ok and outcome.shown == DIFF
    assert outcome.sha256 == hashlib.sha256(DIFF.encode()).hexdigest()
    assert call.plan_digest() is not None  # the diff with the files it names (tests/approvals/test_plans_queue.py)
    assert stubs.only_call().command == ["kubectl", "diff", "-f", "k8s/", "--namespace", "shop"]
    stubs.clear()
    stubs.add("kubectl", stdout="", exit_code=2)  # kubectl diff fails with an error: no plan, no apply
    failed = prepared(library, "kubectl_apply", paths=["k8s/"]).plan_step
    assert failed is not None and not failed.run().ok


def test_terraform_apply_applies_the_plan_it_showed(library: LibraryRunner, stubs: Stubs) -> None:
    call = prepared(library, "terraform_apply", dir="infra", var_files=["prod.tfvars"])
    step = call.plan_step
    assert step is not None and step.file is not None and step.needed
    assert step.run().ok
    assert step.file.read_text() == "stub plan\n"  # the stub's terraform plan -out wrote it
    assert call.run().ok
    assert stubs.commands() == [
        ["terraform", "-chdir=infra", "plan", "-input=false", "-no-color", "-lock-timeout=60s", "-out={plan_file}",
         "-var-file", "prod.tfvars"],
        ["terraform", "-chdir=infra", "show", "-no-color", "{sealed plan_file}"],
        ["terraform", "-chdir=infra", "apply", "-input=false", "-no-color", "-lock-timeout=60s", "{sealed plan_file}"]]


@needs("terraform")
def test_the_real_terraform_applies_exactly_the_plan_shown(real_library: LibraryRunner, workdir: Path) -> None:
    infra = terraform_config(workdir)
    other = prepared(real_library, "terraform_apply", dir="infra")  # a plan of size 2
    assert other.plan_step is not None and other.plan_step.run().ok
    call = prepared(real_library, "terraform_apply", dir="infra", var_files=["prod.tfvars"])
    step = call.plan_step
    assert step is not None and step.file is not None
    outcome = step.run()
    assert outcome.ok, outcome.failure
    assert "Changes to Outputs:" in outcome.shown and "+ size = 5" in outcome.shown, outcome.shown
    assert outcome.sha256 == hashlib.sha256(step.file.read_bytes()).hexdigest()
    # Another (valid) plan put in its place after the yes: refused, nothing applied.
    assert other.plan_step.file is not None
    saved = step.file.read_bytes()
    step.file.chmod(0o600)
    step.file.write_bytes(other.plan_step.file.read_bytes())
    refused = call.run()
    assert not refused.ok and "the plan changed" in refused.content
    assert not (infra / "terraform.tfstate").exists()
    step.file.write_bytes(saved)  # the very plan shown: applied
    applied = call.run()
    assert applied.ok, applied.content
    assert json.loads((infra / "terraform.tfstate").read_text())["outputs"]["size"]["value"] == 5
    step.discard()
    other.plan_step.discard()


@needs("kubectl")
def test_the_real_kubectl_diff_failing_refuses_with_its_error(real_library: LibraryRunner, workdir: Path,
                                                             tmp_path: Path) -> None:
    """No cluster here: kubectl diff exits 2 (an error, not differences), so the plan step fails, naming it."""
    config = tmp_path / "kubeconfig"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: {server: "
                      "'http://127.0.0.1:9'}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: c, context: "
                      "{cluster: c, user: u}}]\n")
    (workdir / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n")
    real_library.executor.ctx.host_env["KUBECONFIG"] = str(config)
    call = prepared(real_library, "kubectl_apply", paths=["cm.yaml"])
    assert call.plan_step is not None
    outcome = call.plan_step.run()
    assert not outcome.ok and outcome.failure is not None
    assert "the plan step (kubectl diff -f cm.yaml) exited with 2" in outcome.failure
    assert "connection refused" in outcome.failure
