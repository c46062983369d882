"""grep and glob on real trees. Every engine present on this machine runs the same tests (ripgrep only
when installed; the Python engine always), so their output formats cannot drift apart."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.builtins import search
from nami_yaml.builtins.search import compile_glob, parse_rg_matches
from nami_yaml.errors import ToolError
from nami_yaml.runtime import RuntimeContext

ENGINES = ["python"] + (["rg"] if shutil.which("rg") else [])


@pytest.fixture(params=ENGINES)
def sctx(request: pytest.FixtureRequest, ctx: RuntimeContext, tmp_path: Path) -> RuntimeContext:
    """A context whose PATH decides the engine: an empty folder hides rg from the search tools."""
    if request.param == "python":
        empty = tmp_path / "no-tools"
        empty.mkdir()
        return replace(ctx, host_env={**ctx.host_env, "PATH": str(empty)})
    return replace(ctx, host_env=dict(os.environ))


@pytest.fixture
def tree(sctx: RuntimeContext) -> Path:
    root = sctx.workspace
    files = {
        "README.md": "# Demo\nTODO: write docs\n",
        "src/app.py": "import os\n\ndef load_config():\n    return os.environ  # TODO tidy\n",
        "src/util/helpers.py": "def load_helpers():\n    pass\n",
        "src/util/data.yaml": "todo: false\n",
        "tests/test_app.py": "from src.app import load_config\n",
        ".hidden/secret.py": "TODO hidden\n",
        "node_modules/pkg/index.js": "// TODO vendored\n",
        "build/out.py": "# TODO generated\n",
        "logs/debug.log": "TODO ignored by pattern\n",
        ".gitignore": "/build/\n*.log\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "src" / "blob.bin").write_bytes(b"TODO\x00\x01\x02")
    return root


# ---------------------------------------------------------------- grep


def test_grep_lists_matches_as_path_line_text(sctx: RuntimeContext, tree: Path) -> None:
    result = search.grep("TODO", ctx=sctx)
    assert result.content.split("\n") == [
        "README.md:2:TODO: write docs",
        "src/app.py:4:    return os.environ  # TODO tidy",
        "[2 matching lines in 2 files]",
    ]
    assert result.details == {"matches": 2, "files": 2, "truncated": False}


def test_grep_regex_glob_and_path(sctx: RuntimeContext, tree: Path) -> None:
    assert search.grep(r"def load_\w+", glob="*.py", ctx=sctx).content.split("\n") == [
        "src/app.py:3:def load_config():",
        "src/util/helpers.py:1:def load_helpers():",
        "[2 matching lines in 2 files]",
    ]
    anchored = search.grep("load_", path="src", glob="util/*.py", ctx=sctx).content
    assert anchored.split("\n")[0] == "src/util/helpers.py:1:def load_helpers():"
    assert "src/app.py" not in anchored
    single = search.grep("load_config", path="tests/test_app.py", ctx=sctx).content
    assert single.startswith("tests/test_app.py:1:from src.app import load_config")
    assert "src/util/data.yaml:1:todo: false" in search.grep("(?i)^todo", ctx=sctx).content


def test_grep_skips_hidden_vendored_ignored_and_binary(sctx: RuntimeContext, tree: Path) -> None:
    content = search.grep("TODO", ctx=sctx).content
    for skipped in (".hidden", "node_modules", "build/out.py", "debug.log", "blob.bin"):
        assert skipped not in content
    # Named explicitly, a hidden folder is searched.
    assert ".hidden/secret.py:1:TODO hidden" in search.grep("TODO", path=".hidden", ctx=sctx).content


def test_grep_no_match_and_bad_regex(sctx: RuntimeContext, tree: Path) -> None:
    result = search.grep("nothing_like_this", ctx=sctx)
    assert result.ok and result.content == "No matches for 'nothing_like_this' in the workspace root."
    with pytest.raises(ToolError, match="regular expression|regex"):
        search.grep("(unclosed", ctx=sctx)
    with pytest.raises(ToolError, match="path not found"):
        search.grep("x", path="missing", ctx=sctx)


def test_grep_caps_results_and_counts_all(sctx: RuntimeContext) -> None:
    for n in range(3):
        (sctx.workspace / f"f{n}.txt").write_text("".join(f"hit {i}\n" for i in range(150)))
    result = search.grep("hit", ctx=sctx)
    lines = result.content.split("\n")
    assert len(lines) == 201
    assert lines[0] == "f0.txt:1:hit 0" and lines[199] == "f1.txt:50:hit 49"
    assert lines[-1] == "[450 matching lines in 3 files; showing the first 200. Narrow the pattern, path or glob]"
    assert result.details["truncated"] is True


def test_grep_cuts_long_matching_lines(sctx: RuntimeContext) -> None:
    (sctx.workspace / "min.js").write_text("var a='" + "x" * 5000 + "';needle\n")
    first = search.grep("needle", ctx=sctx).content.split("\n")[0]
    assert first.startswith("min.js:1:var a='xxx") and first.endswith(" ...")
    assert len(first) < 320


def test_grep_boundary(sctx: RuntimeContext, tree: Path, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        search.grep("root", path="/etc", ctx=sctx)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.txt").write_text("TODO outside\n")
    (tree / "linked").symlink_to(outside, target_is_directory=True)
    assert "outside" not in search.grep("TODO", ctx=sctx).content


def test_rg_output_parses_into_the_same_format(ctx: RuntimeContext) -> None:
    """The ripgrep engine's parser, fed real `rg --null --line-number` output shapes."""
    (ctx.workspace / "src").mkdir()
    rg_out = ("./src/a.py\x003:def f():\n"
              "./src/b:c.py\x0010:x = 'a:b'\n"
              "... [1,234 bytes omitted; full output: /tmp/x] ...\n"
              "./src/../../escape.txt\x001:nope\n")
    found = parse_rg_matches(rg_out, ctx.workspace / "src", None, ctx)
    assert found.lines == ["src/a.py:3:def f():", "src/b:c.py:10:x = 'a:b'"]
    assert found.total == 2 and found.files == {"src/a.py", "src/b:c.py"}
    only_b = parse_rg_matches(rg_out, ctx.workspace / "src", compile_glob("b*"), ctx)
    assert only_b.lines == ["src/b:c.py:10:x = 'a:b'"]


# ---------------------------------------------------------------- glob


def test_glob_by_name_at_any_depth(sctx: RuntimeContext, tree: Path) -> None:
    assert search.glob("*.py", ctx=sctx).content.split("\n") == [
        "src/app.py", "src/util/helpers.py", "tests/test_app.py"]


def test_glob_anchored_patterns_and_braces(sctx: RuntimeContext, tree: Path) -> None:
    assert search.glob("src/*.py", ctx=sctx).content == "src/app.py"
    assert search.glob("src/**/*.{py,yaml}", ctx=sctx).content.split("\n") == [
        "src/app.py", "src/util/data.yaml", "src/util/helpers.py"]
    assert search.glob("*.py", path="src/util", ctx=sctx).content == "src/util/helpers.py"
    assert search.glob("test_[a-z]*.py", ctx=sctx).content == "tests/test_app.py"


def test_glob_skips_and_explicit_hidden_path(sctx: RuntimeContext, tree: Path) -> None:
    everything = search.glob("**", ctx=sctx).content
    for skipped in (".hidden", "node_modules", "build/", "debug.log", ".gitignore"):
        assert skipped not in everything
    assert "src/blob.bin" in everything  # binary files are still files
    assert search.glob("*.py", path=".hidden", ctx=sctx).content == ".hidden/secret.py"


def test_glob_caps_with_count(sctx: RuntimeContext) -> None:
    (sctx.workspace / "many").mkdir()
    for i in range(620):
        (sctx.workspace / "many" / f"{i:04d}.txt").write_text("")
    result = search.glob("*.txt", ctx=sctx)
    lines = result.content.split("\n")
    assert len(lines) == 501
    assert lines[0] == "many/0000.txt"
    assert lines[-1] == "[620 files match; showing the first 500. Narrow the pattern or path]"


def test_glob_errors(sctx: RuntimeContext, tree: Path) -> None:
    assert search.glob("*.rs", ctx=sctx).content == "No files match '*.rs' in the workspace root."
    with pytest.raises(ToolError, match="relative"):
        search.glob("/etc/*", ctx=sctx)
    with pytest.raises(ToolError, match="not a folder"):
        search.glob("*", path="README.md", ctx=sctx)
    with pytest.raises(ToolError, match="outside the workspace"):
        search.glob("*", path="..", ctx=sctx)


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("*.py", "a/b/c.py", True),
    ("*.py", "a/b/c.pyc", False),
    ("a/*.py", "a/c.py", True),
    ("a/*.py", "a/b/c.py", False),
    ("a/**/*.py", "a/c.py", True),
    ("a/**/*.py", "a/b/d/c.py", True),
    ("**/test_*.py", "test_x.py", True),
    ("[!a]*", "b.txt", True),
    ("[!a]*", "a.txt", False),
    ("*.{yml,yaml}", "x/y.yaml", True),
    ("?.md", "ab.md", False),
    ("./src/*.ts", "src/a.ts", True),
])
def test_compile_glob(pattern: str, path: str, expected: bool) -> None:
    assert compile_glob(pattern)(path) is expected


def test_cancel_stops_a_python_walk(ctx: RuntimeContext, tmp_path: Path) -> None:
    (ctx.workspace / "a.txt").write_text("needle\n")
    empty = tmp_path / "no-tools"
    empty.mkdir()
    ctx = replace(ctx, host_env={"PATH": str(empty)})
    ctx.cancel.set()
    with pytest.raises(ToolError, match="interrupted"):
        search.grep("needle", ctx=ctx)
    with pytest.raises(ToolError, match="interrupted"):
        search.glob("*.txt", ctx=ctx)
