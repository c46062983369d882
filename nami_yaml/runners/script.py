"""``script:`` tools: a bash script whose arguments arrive as environment variables, never as script text."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from typing import Any

from nami_yaml.display import summarize_arguments
from nami_yaml.errors import ToolError
from nami_yaml.runners.base import ProcessInvocation, build_invocation, template_values
from nami_yaml.runners.options import ProcessOptions
from nami_yaml.runners.template import TARGET_PREFIX, TemplateError, render_text, scalar_text
from nami_yaml.runtime import RuntimeContext

ARGS_VARIABLE = "NAMI_ARGS"

# Which parameter names become variables is an allowlist, not a list of known-bad names: programs read
# far too many variables to list (http_proxy, GCONV_PATH, GLIBC_TUNABLES, PYTHONHOME, JAVA_TOOL_OPTIONS,
# TMOUT, ... all loaded once). Variables that programs read are spelled in capitals, with one family of
# exceptions, the proxy variables, which curl, wget, git and Python also read in lower case. So a name
# becomes a variable only if it has a lower-case letter and is not a proxy variable.
PROXY_SUFFIX = "_proxy"


def parameter_name_problem(name: str) -> str | None:
    """Why a parameter name cannot be an environment variable of a script, or None when it can."""
    if not name.isidentifier() or not name.isascii():
        return f"parameter '{name}' is not a shell identifier, so a script cannot receive it as ${name}"
    if name.lower().endswith(PROXY_SUFFIX):
        return (f"parameter '{name}' would set the proxy variable {name}, which reroutes the network traffic "
                "of the programs the script runs; rename it")
    if not any(char.islower() for char in name):
        return (f"parameter '{name}' would set the environment variable {name}; only names with a lower-case "
                "letter become variables (programs read capitalised ones: PATH, LD_PRELOAD, PYTHONHOME, ...); "
                "rename it")
    return None


def _refuse_dashes(name: str, value: Any) -> None:
    """ToolError when ``value`` (or an item of it: a script may hand items on, `jq -r '.[]'`) starts with
    '-', also after leading white space (an unquoted "$path" drops it)."""
    for item in value if isinstance(value, list) else [value]:
        text = scalar_text(item) if not isinstance(item, (dict, list)) else ""
        if text.lstrip().startswith("-"):
            raise ToolError(f"value {text[:40]!r} of parameter '{name}' starts with '-' and would be read as an "
                            "option by the programs the script runs; pass a value that does not start with '-'")


@dataclass(frozen=True)
class ScriptRunner:
    script: str
    options: ProcessOptions
    declared: frozenset[str] = frozenset()  # parameter names from the schema, checked at load
    allow_dash: frozenset[str] = frozenset()  # parameters whose values may start with '-'

    kind = "script"

    def invocation(self, tool: str, args: dict[str, Any], ctx: RuntimeContext) -> ProcessInvocation:
        call_env = {}
        for name, value in args.items():
            # Only declared names (checked at load: lower case, no proxy) become variables. An extra key (additionalProperties)
            # is chosen by the model: XDG_CONFIG_HOME, KUBECONFIG or SHELLOPTS+PS4 would let it steer the
            # programs the script runs, so extra keys arrive in $NAMI_ARGS only.
            if name in self.declared:
                call_env[name] = scalar_text(value)
                # The dash rule of command: tools, for what a script hands on: `find "$path"` reads
                # path=-ls as an option whatever the quoting. A target's vars are the project's own.
                if name not in self.allow_dash and not name.startswith(TARGET_PREFIX):
                    _refuse_dashes(name, value)
        call_env[ARGS_VARIABLE] = json.dumps(args, ensure_ascii=False, sort_keys=True)
        if any("\x00" in value for value in call_env.values()):
            raise ToolError("a value contains a NUL byte, which cannot be passed in an environment variable")
        values = template_values(args, ctx)
        try:
            stdin = None if self.options.stdin is None else render_text(self.options.stdin, values)
        except TemplateError as exc:
            raise ToolError(str(exc)) from None
        bash = shutil.which("bash") or "/bin/bash"
        # The script text is a fixed argument; "$0" names the tool in bash's own error messages.
        argv = [bash, "--noprofile", "--norc", "-c", self.script, tool]
        shown = summarize_arguments(args)
        return build_invocation(
            tool, argv, self.options, ctx, stdin=stdin, call_env=call_env, drop_env=("BASH_ENV", "ENV"),
            label=f"{tool} (bash script) {shown}".rstrip(), kind="script", script=self.script, values=values,
        )

