"""Pi's request weight is measured from Pi's own first request, or the table says why it was not: never a
constant standing in for a measurement. A stand-in for Pi checks the plumbing everywhere; the real Pi runs
where a full benchmark installed it into the cache."""

from __future__ import annotations

import json
import os
import pwd
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.pi import (  # noqa: E402
    VERSION,
    NotMeasured,
    PiWeight,
    cache_folder,
    first_request,
    install,
    installed,
    measure_pi,
)
from bench.table import markdown  # noqa: E402
from bench.tokens import pi_rows  # noqa: E402
from nami_yaml.session.context import Part, definition_chars  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": "read", "description": "Read a file, with «quotes».",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}},
         {"type": "function", "function": {"name": "bash", "description": "Run a command.",
                                           "parameters": {"type": "object", "properties": {}}}}]
SYSTEM = "You are a stand-in for Pi.\nCurrent working directory: somewhere"

# What Pi does with its arguments, reduced: read the provider from $PI_CODING_AGENT_DIR/models.json and
# send one request (system prompt and tools) to its baseUrl.
STAND_IN = textwrap.dedent(f"""\
    import json, os, sys, urllib.request
    args = sys.argv[1:]
    assert args[args.index("--provider") + 1] == "fake" and "-p" in args and "--offline" in args, args
    provider = json.load(open(os.path.join(os.environ["PI_CODING_AGENT_DIR"], "models.json")))["providers"]["fake"]
    body = {{"model": provider["models"][0]["id"], "messages": [{{"role": "system", "content": {SYSTEM!r}}},
             {{"role": "user", "content": [{{"type": "text", "text": args[-1]}}]}}], "tools": {TOOLS!r}}}
    request = urllib.request.Request(provider["baseUrl"] + "/chat/completions", json.dumps(body).encode(),
                                     {{"content-type": "application/json", "authorization": "Bearer " + provider["apiKey"]}})
    print(json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"])
    """)


def test_the_first_request_is_weighed_as_nami_s_own(tmp_path: Path) -> None:
    script = tmp_path / "pi.py"
    script.write_text(STAND_IN)
    weight = first_request([sys.executable, str(script)])
    assert isinstance(weight, PiWeight), weight
    assert weight.system_prompt == len(SYSTEM)
    assert sorted(weight.tools, key=lambda p: p.label) == sorted(
        [Part(f"tool {t['function']['name']}", definition_chars(t)) for t in TOOLS], key=lambda p: p.label)
    assert weight.total == len(SYSTEM) + sum(definition_chars(t) for t in TOOLS)


def test_a_pi_that_sends_nothing_is_not_measured(tmp_path: Path) -> None:
    script = tmp_path / "pi.py"
    script.write_text("import sys; sys.stderr.write('no provider named fake\\n'); sys.exit(3)\n")
    weight = first_request([sys.executable, str(script)])
    assert weight == NotMeasured("pi sent no request (exit 3: no provider named fake)")


def test_without_npm_pi_is_not_measured_and_nothing_is_left_in_the_cache(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))
    cache = tmp_path / "cache"
    assert install(cache) == NotMeasured("npm is not installed")
    assert measure_pi(may_install=True, env={"NAMI_BENCH_CACHE": str(cache)}) == NotMeasured("npm is not installed")
    assert not cache.exists() or not any(cache.iterdir())


def test_a_quick_run_does_not_install_pi(tmp_path: Path) -> None:
    found = measure_pi(may_install=False, env={"NAMI_BENCH_CACHE": str(tmp_path)})
    assert isinstance(found, NotMeasured) and "quick runs do not install it" in found.why


def test_the_cache_is_outside_the_repository(tmp_path: Path) -> None:
    assert cache_folder({"NAMI_BENCH_CACHE": str(tmp_path)}) == tmp_path
    assert cache_folder({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "nami-bench"
    assert cache_folder({"HOME": str(tmp_path)}) == tmp_path / ".cache" / "nami-bench"
    assert ROOT not in cache_folder({}).parents


def test_the_table_says_why_pi_was_not_measured() -> None:
    rows = pi_rows([Part("system prompt", 300)], [Part("tool read_file", 900)], NotMeasured("npm is not installed"))
    table = markdown(rows)
    assert "| 1,200 chars | Pi: not measured (npm is not installed) |" in table
    assert all(row.baseline is None for row in rows) and rows[4].met is None and rows[4].target == "≤ 1.0× Pi's"
    measured = pi_rows([Part("system prompt", 300)], [Part("tool read_file", 900)],
                       PiWeight(VERSION, 2_000, [Part("tool read", 700), Part("tool bash", 600)]))
    assert [(r.key, r.baseline) for r in measured if r.unit == "chars"] == [
        ("tokens.prompt.chars", 2_000), ("tokens.tools.chars", 1_300), ("tokens.total.chars", 3_300)]
    assert measured[4].met is True and f"Pi {VERSION}, measured" in markdown(measured)


def test_the_real_pi_when_a_full_run_installed_it() -> None:
    # The cache a full run used: tests get a HOME of their own, the benchmark runs with the user's.
    cache = cache_folder({"NAMI_BENCH_CACHE": os.environ.get("NAMI_BENCH_CACHE", ""),
                          "HOME": pwd.getpwuid(os.getuid()).pw_dir})
    program = installed(cache)
    if program is None:
        pytest.skip(f"Pi {VERSION} is not in {cache}: `python -m bench.pi` installs it (needs npm)")
    weight = first_request([str(program)])
    assert isinstance(weight, PiWeight), weight
    assert sorted(p.label for p in weight.tools) == ["tool bash", "tool edit", "tool read", "tool write"]
    assert weight.system_prompt > 1_000 and weight.tool_chars > 1_000
    assert json.dumps(weight.total)  # a number, from the request itself
