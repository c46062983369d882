"""Calling an entry point's function: the import (through the import guard), the arguments, and what it
returns turned into a ToolResult. Used inside nami (built-ins) and in the child that runs a tool file's
entry point (runners/entry_child.py)."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import sys
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nami_yaml.errors import ToolError
from nami_yaml.result import ToolResult
from nami_yaml.runners.import_guard import CodeCheck, guard_folder

CONTEXT_PARAMETER = "ctx"
_import_lock = threading.Lock()


def resolve(target: str, base_dir: Path | None, code_check: CodeCheck | None = None) -> Any:
    """The function ``target`` names ("package.module:function"), importing its module on first use.
    Modules from the tool's folder are imported from source only and vetted by ``code_check``."""
    module_name, _, function_name = target.partition(":")
    with _import_lock:
        if base_dir is not None:
            guard_folder(base_dir, code_check)
            if str(base_dir) not in sys.path:
                sys.path.append(str(base_dir))
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            where = f" (looked in {base_dir} and sys.path)" if base_dir else ""
            raise ToolError(f"cannot import {module_name}{where}: {type(exc).__name__}: {exc}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ToolError(f"{module_name} has no callable named {function_name}")
    return function


def call(target: str, base_dir: Path | None, code_check: CodeCheck | None, args: Mapping[str, Any],
         ctx: Any) -> ToolResult:
    """Import and call the function; whatever it does is a result, never raised."""
    try:
        function = resolve(target, base_dir, code_check)
        kwargs = dict(args)
        if accepts_context(function):
            kwargs[CONTEXT_PARAMETER] = ctx
        return as_result(function(**kwargs))
    except ToolError as exc:
        return ToolResult.error(str(exc))
    except Exception as exc:  # a tool's bug is a result for the model, never a crash of the loop
        return ToolResult.error(f"{type(exc).__name__}: {exc}")


def as_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(value)
    if value is None:
        return ToolResult("(no output)")
    return ToolResult(json.dumps(value, ensure_ascii=False, indent=1, default=str))


def accepts_context(function: Any) -> bool:
    """Whether ``function`` takes ``ctx``: read from its signature once per function (inspect.signature,
    some 20 µs, was two fifths of calling a small tool inside nami, at every call: bench/inprocess.py).
    A callable that cannot be held weakly (a built-in function) is asked each time."""
    try:
        return _TAKES_CONTEXT[function]
    except (KeyError, TypeError):
        pass
    try:
        takes = CONTEXT_PARAMETER in inspect.signature(function).parameters
    except (TypeError, ValueError):
        takes = False
    with contextlib.suppress(TypeError):
        _TAKES_CONTEXT[function] = takes
    return takes


# A function's signature does not change while it is alive; a module imported again gives new functions.
_TAKES_CONTEXT: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
