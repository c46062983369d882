"""Plans kept between calls (runners/sandbox/plan_cache.py): the same plan while nothing it was made from
changed, a new one as soon as something did: a file that appears where a credential variable points, a
path declared readable that now exists, a git repository made in the workspace, a link retargeted, a deny
rule, the environment. The calls run in the real bwrap, so what the plan says is what the call meets."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.builtins.shell import bash
from nami_yaml.runners.sandbox import plan_cache
from nami_yaml.runners.sandbox.plan import KIND_BASH, SandboxPlan, bash_needs, plan_for
from nami_yaml.runtime import RuntimeContext
from tests.sandboxing import need_bwrap


@pytest.fixture(autouse=True)
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders made by the test a moment ago count as settled: else (plan_cache.RACY) no plan made in the
    first two seconds of a new folder is kept, and every check below would pass without the cache."""
    need_bwrap()
    monkeypatch.setattr(plan_cache, "RACY", -3600.0)
    plan_cache_of_plans().clear()


def plan_cache_of_plans() -> plan_cache.PlanCache:
    from nami_yaml.runners.sandbox.plan import PLANS

    return PLANS


def planned(ctx: RuntimeContext) -> SandboxPlan:
    return plan_for(ctx, bash_needs(ctx), kind=KIND_BASH)


def with_env(ctx: RuntimeContext, **variables: str) -> RuntimeContext:
    return replace(ctx, host_env={**ctx.host_env, **variables})


def test_an_unchanged_call_gets_the_plan_made_before(ctx: RuntimeContext) -> None:
    first = planned(ctx)
    assert planned(ctx) is first
    (ctx.workspace / "notes.txt").write_text("x")  # a change the plan does not depend on... is still a change
    assert planned(ctx) is not first  # (the workspace's entries changed: looked at again, never assumed)
    again = planned(ctx)
    assert planned(ctx) is again and again == first


def test_a_file_appearing_where_a_credential_variable_points_is_hidden_from_the_next_call(
        ctx: RuntimeContext) -> None:
    credentials = ctx.workspace / "deploy" / "aws" / "credentials"
    ctx = with_env(ctx, AWS_SHARED_CREDENTIALS_FILE=str(credentials))
    before = planned(ctx)
    assert credentials not in before.hidden
    credentials.parent.mkdir(parents=True)  # folders that did not exist either: a change two levels down
    credentials.write_text("[default]\naws_secret_access_key = s3cr3t\n")
    after = planned(ctx)
    assert credentials in after.hidden
    assert "s3cr3t" not in bash(f"cat {credentials}", ctx=ctx).content


def test_a_link_retargeted_between_calls_is_followed_again(ctx: RuntimeContext, tmp_path: Path) -> None:
    """The credential file's path goes through links outside the workspace (conf -> releases/live ->
    releases/v1): pointing live at v2, which holds the file, changes no folder on the path as written, nor
    v1: only the folder of the link in the middle."""
    releases = tmp_path / "releases"
    (releases / "v1").mkdir(parents=True)
    (releases / "v2").mkdir()
    (releases / "v2" / "kubeconfig").write_text("token: s3cr3t\n")
    (releases / "live").symlink_to(releases / "v1")
    (ctx.workspace / "conf").symlink_to(releases / "live")
    ctx = with_env(ctx, KUBECONFIG=str(ctx.workspace / "conf" / "kubeconfig"))
    assert planned(ctx).hidden == planned(ctx).hidden
    (releases / "next").symlink_to(releases / "v2")
    (releases / "next").replace(releases / "live")
    assert releases / "v2" / "kubeconfig" in planned(ctx).hidden
    assert "s3cr3t" not in bash(f"cat {ctx.workspace}/conf/kubeconfig", ctx=ctx).content


def test_a_declared_read_that_now_exists_is_shown(ctx: RuntimeContext, temp_home: Path) -> None:
    ctx = replace(ctx, sandbox=replace(ctx.sandbox, reads=("~/.terraformrc",)))
    rc = temp_home / ".terraformrc"
    assert rc not in planned(ctx).reads
    rc.write_text("plugin_cache_dir = x\n")
    assert rc in planned(ctx).reads
    assert "plugin_cache_dir" in bash(f"cat {rc}", ctx=ctx).content


def test_a_repository_made_between_calls_has_its_config_read_only_in_the_next(ctx: RuntimeContext) -> None:
    planned(ctx)
    git = ctx.workspace / ".git"
    (git / "objects").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "config").write_text("[core]\n")
    plan = planned(ctx)
    assert git / "config" in plan.read_only and git in plan.pinned
    result = bash("echo '[core] fsmonitor = id' >> .git/config", ctx=ctx)
    assert "Read-only file system" in result.content and (git / "config").read_text() == "[core]\n"


def test_a_changed_deny_rule_masks_the_program_in_the_next_call(ctx: RuntimeContext) -> None:
    plain = planned(ctx)
    denied = replace(ctx, denied_programs=("touch",))
    masked = planned(denied)
    assert plain.masked == () and masked.masked != ()
    assert planned(ctx) is plain and planned(denied) is masked  # each kept for its own inputs
    assert not bash("touch made", ctx=denied).ok and not (ctx.workspace / "made").exists()


def test_a_changed_environment_gives_a_new_plan(ctx: RuntimeContext, tmp_path: Path) -> None:
    other_home = tmp_path / "other-home"
    other_home.mkdir()
    first = planned(ctx)
    moved = planned(with_env(ctx, HOME=str(other_home)))
    assert moved is not first and moved.empty == (other_home,)
    assert planned(ctx) is first


def test_a_plan_made_just_after_a_change_serves_that_call_only(ctx: RuntimeContext,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A change in the same clock tick as the plan's making could leave its folder's times as read: a plan
    made within RACY seconds of a change to a folder it looked at is not kept."""
    monkeypatch.setattr(plan_cache, "RACY", 2.0)
    (ctx.workspace / "just-made").write_text("x")
    assert planned(ctx) is not planned(ctx)
