"""nami's own git commands (git_index.py: what a repository's index lists), run as every other program nami
starts: through run_process, in the sandbox plan of nami's own programs.

The plan is made from nami's defaults, never from a project's ``sandbox:`` (the index is read for trust,
before an agent.yaml is trusted, and a cloned one saying ``mode: off`` must not take git out of the
sandbox): sandboxed where bubblewrap works, as it is where not, as rg is. Inside: the folder git runs in
read-only, the repository's git folders shown read-only where the sandbox would hide them, no network, the
home folder empty, credentials and nami's own folders hidden. The environment is the scrubbed one of a
minimal host (PATH, the locale) with the command's own variables; the output is bounded, the deadline fixed.
"""

from __future__ import annotations

import os

from nami_yaml.env_secrets import child_environment, minimal_host_env
from nami_yaml.git_index import LIST_TIMEOUT, MAX_LISTING_BYTES, GitCommand
from nami_yaml.runners.process import ProcessRequest, run_process
from nami_yaml.runners.sandbox.plan import KIND_NAMI, plan_for
from nami_yaml.runtime import RuntimeContext
from nami_yaml.sandbox_settings import SandboxSettings

NAMI_DEFAULTS = SandboxSettings()


def run_git(command: GitCommand) -> str | None:
    """The command's standard output, or None where it could not start, failed, timed out or said more
    than MAX_LISTING_BYTES."""
    host = dict(os.environ)
    ctx = RuntimeContext(workspace=command.cwd, host_env=host, sandbox=NAMI_DEFAULTS)
    sandbox = plan_for(ctx, kind=KIND_NAMI, read_only=True, visible=command.git_folders)
    request = ProcessRequest(argv=list(command.argv), cwd=ctx.workspace,
                             env=child_environment(minimal_host_env(host), extra=command.env),
                             timeout=LIST_TIMEOUT, max_output=MAX_LISTING_BYTES, spill_dir=None, max_saved=0,
                             sandbox=sandbox)
    result = run_process(request)
    return result.stdout if result.ok and not result.truncated else None
