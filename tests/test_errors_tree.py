"""The drawing of nami's exceptions in nami_yaml/errors.py cannot rot: every exception class defined in a
module of nami_yaml is named in it."""

from __future__ import annotations

import builtins
import importlib
import inspect
import pkgutil
import re
from types import ModuleType

import nami_yaml
from nami_yaml import errors

OPTIONAL = {"mcp", "mcp_types", "uvicorn", "ray", "opentelemetry", "jinja2"}  # the extras' packages: a module needing an absent one is skipped
NOT_IMPORTED = {"nami_yaml.runners.vetted_python"}  # run as a script in a server's interpreter, never imported


def nami_modules() -> list[ModuleType]:
    modules = [nami_yaml]
    for info in pkgutil.walk_packages(nami_yaml.__path__, "nami_yaml."):
        if info.name.rpartition(".")[2] == "__main__" or info.name in NOT_IMPORTED:
            continue  # running them runs the program
        try:
            modules.append(importlib.import_module(info.name))
        except ModuleNotFoundError as exc:
            if (exc.name or "").partition(".")[0] not in OPTIONAL:
                raise
    return modules


def defined_exceptions(modules: list[ModuleType]) -> dict[str, str]:
    """Every exception class defined in ``modules`` (not imported into them): name -> module."""
    found: dict[str, str] = {}
    for module in modules:
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                found[value.__name__] = module.__name__
    return found


def named_in_drawing() -> set[str]:
    return set(re.findall(r"\b_?[A-Z]\w*\b", errors.__doc__ or ""))


def test_every_exception_class_of_nami_is_in_the_errors_tree() -> None:
    found = defined_exceptions(nami_modules())
    assert {"NamiError", "ToolError", "StopRun", "UntrustedProject"} <= set(found)  # the walk finds them
    missing = {name: module for name, module in found.items() if name not in named_in_drawing()}
    assert missing == {}, f"draw these in nami_yaml/errors.py's docstring: {missing}"


def test_the_check_notices_a_class_left_out() -> None:
    class LeftOutError(Exception):
        pass

    module = ModuleType("nami_yaml.fake")
    LeftOutError.__module__ = module.__name__
    module.LeftOutError = LeftOutError  # type: ignore[attr-defined]
    assert defined_exceptions([module]) == {"LeftOutError": "nami_yaml.fake"}
    assert "LeftOutError" not in named_in_drawing()


def test_every_class_drawn_still_exists() -> None:
    # The other way round: a class renamed or removed leaves no stale branch (builtins are the trunk).
    drawn = set(re.findall(r"\+-- (\w+)", errors.__doc__ or ""))
    assert {"NamiError", "ParserMissing", "UnknownLibraryName"} <= drawn  # the drawing is read
    builtin = {name for name in drawn if hasattr(builtins, name)}
    assert builtin == {"ValueError", "RuntimeError", "LookupError"}
    assert drawn - builtin - set(defined_exceptions(nami_modules())) == set()


def test_each_class_is_drawn_with_the_module_that_defines_it() -> None:
    # A class moved to another module (policy.bash -> shell.bash) must move in the drawing too.
    drawn = dict(re.findall(r"\+-- (\w+)[ .]*\s([a-z_][\w.]*)\s", errors.__doc__ or ""))
    assert drawn["ParserMissing"] == "shell.bash" and len(drawn) >= 30  # the drawing is read
    found = defined_exceptions(nami_modules())
    wrong = {name: (module, found[name].removeprefix("nami_yaml.")) for name, module in drawn.items()
             if name in found and found[name].removeprefix("nami_yaml.") != module}
    assert wrong == {}, f"(drawn, defined) modules differ: {wrong}"
