"""The digest binds the whole call: the same tool and arguments with another environment, folder or
input is another call, said by name; "yes for the session" binds the same way."""

from __future__ import annotations

from dataclasses import replace

from nami_yaml.agent.toolbox import PreparedCall
from nami_yaml.approvals.binding import bind, digest_of
from nami_yaml.policy.session import SessionApprovals
from nami_yaml.runtime import RuntimeContext
from tests.helpers import tool_executor

TOOL = """\
name: deploy
description: Deploy.
risk: write
parameters: {type: object, properties: {name: {type: string}}, required: [name]}
env_passthrough: [KUBECONFIG]
command: [echo, "{name}"]
"""


def prepared(ctx: RuntimeContext, **env: str) -> PreparedCall:
    context = replace(ctx, host_env={**ctx.host_env, **env})
    call = tool_executor(context, TOOL).prepare("deploy", '{"name": "web"}')
    assert not isinstance(call, str) and hasattr(call, "plan")
    return call  # type: ignore[return-value]


def test_another_environment_is_another_call_and_says_so(ctx: RuntimeContext) -> None:
    staging = prepared(ctx, KUBECONFIG="/home/ann/.kube/staging")
    prod = prepared(ctx, KUBECONFIG="/home/ann/.kube/prod")
    assert staging.arguments == prod.arguments
    assert bind(staging).changed(bind(prod)) == ["the environment"]
    assert bind(staging).changed(bind(prepared(ctx, KUBECONFIG="/home/ann/.kube/staging"))) == []


def test_yes_for_the_session_is_for_the_same_whole_call(ctx: RuntimeContext) -> None:
    session = SessionApprovals(digest_of)
    session.remember(prepared(ctx, KUBECONFIG="/home/ann/.kube/staging"))
    assert session.approved(prepared(ctx, KUBECONFIG="/home/ann/.kube/staging"))
    assert not session.approved(prepared(ctx, KUBECONFIG="/home/ann/.kube/prod"))


def test_yes_for_the_session_expires_after_approvals_expires(ctx: RuntimeContext) -> None:
    now = [100.0]
    session = SessionApprovals(digest_of, expires=15 * 60, clock=lambda: now[0])
    session.remember(prepared(ctx, KUBECONFIG="/home/ann/.kube/staging"))
    now[0] += 15 * 60
    assert session.approved(prepared(ctx, KUBECONFIG="/home/ann/.kube/staging"))
    now[0] += 1
    assert not session.approved(prepared(ctx, KUBECONFIG="/home/ann/.kube/staging"))
    assert len(session) == 0  # dropped: only a new yes keeps it again


def test_secrets_are_hashed_not_kept(ctx: RuntimeContext) -> None:
    binding = bind(prepared(ctx, KUBECONFIG="hunter2-secret"))
    assert "hunter2-secret" not in str(binding.to_json())
