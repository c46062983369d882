"""grep and glob on real trees. Both engines run the same tests, so their output cannot drift apart: the
`engine` fixture gives a context whose PATH decides which one runs. ripgrep is optional for users, so
without it the "rg" cases are skipped with the reason; CI sets NAMI_REQUIRE_RG=1, and there a missing rg
fails them, so CI always tests both engines."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from nami_yaml.builtins import search
from nami_yaml.builtins.search import compile_glob, parse_rg_matches
from nami_yaml.errors import ToolError
from nami_yaml.runtime import RuntimeContext


def _with_path(ctx: RuntimeContext, folder: Path) -> RuntimeContext:
    return replace(ctx, host_env={**ctx.host_env, "PATH": str(folder)})


@pytest.fixture(params=["rg", "python"])
def engine(request: pytest.FixtureRequest, ctx: RuntimeContext, tmp_path: Path) -> RuntimeContext:
    """A context whose PATH decides the engine: rg's own folder, or an empty folder that hides rg."""
    if request.param == "python":
        empty = tmp_path / "no-tools"
        empty.mkdir()
        ectx = _with_path(ctx, empty)
        assert search._ripgrep(ectx) is None
        return ectx
    rg = shutil.which("rg")
    if rg is None:
        reason = "ripgrep (rg) is not on PATH, so the rg engine cannot be tested; install it (apt-get install ripgrep)"
        if os.environ.get("NAMI_REQUIRE_RG") == "1":
            pytest.fail(f"{reason}: NAMI_REQUIRE_RG=1 requires it")
        pytest.skip(reason)
    ectx = _with_path(ctx, Path(rg).parent)
    found = search._ripgrep(ectx)
    assert found is not None and Path(found).parent == Path(rg).parent
    return ectx


@pytest.fixture
def tree(engine: RuntimeContext) -> Path:
    root = engine.workspace
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


def test_grep_lists_matches_as_path_line_text(engine: RuntimeContext, tree: Path) -> None:
    result = search.grep("TODO", ctx=engine)
    assert result.content.split("\n") == [
        "README.md:2:TODO: write docs",
        "src/app.py:4:    return os.environ  # TODO tidy",
        "[2 matching lines in 2 files]",
    ]
    assert result.details == {"matches": 2, "files": 2, "truncated": False}


def test_grep_regex_glob_and_path(engine: RuntimeContext, tree: Path) -> None:
    assert search.grep(r"def load_\w+", glob="*.py", ctx=engine).content.split("\n") == [
        "src/app.py:3:def load_config():",
        "src/util/helpers.py:1:def load_helpers():",
        "[2 matching lines in 2 files]",
    ]
    anchored = search.grep("load_", path="src", glob="util/*.py", ctx=engine).content
    assert anchored.split("\n")[0] == "src/util/helpers.py:1:def load_helpers():"
    assert "src/app.py" not in anchored
    single = search.grep("load_config", path="tests/test_app.py", ctx=engine).content
    assert single.startswith("tests/test_app.py:1:from src.app import load_config")
    assert "src/util/data.yaml:1:todo: false" in search.grep("(?i)^todo", ctx=engine).content


def test_grep_skips_hidden_vendored_ignored_and_binary(engine: RuntimeContext, tree: Path) -> None:
    content = search.grep("TODO", ctx=engine).content
    for skipped in (".hidden", "node_modules", "build/out.py", "debug.log", "blob.bin"):
        assert skipped not in content
    # Named explicitly, a hidden folder is searched.
    assert ".hidden/secret.py:1:TODO hidden" in search.grep("TODO", path=".hidden", ctx=engine).content


def test_grep_no_match_and_bad_regex(engine: RuntimeContext, tree: Path) -> None:
    result = search.grep("nothing_like_this", ctx=engine)
    assert result.ok and result.content == "No matches for 'nothing_like_this' in the workspace root."
    with pytest.raises(ToolError, match="regular expression|regex"):
        search.grep("(unclosed", ctx=engine)
    with pytest.raises(ToolError, match="path not found"):
        search.grep("x", path="missing", ctx=engine)


def test_grep_caps_results_and_counts_all(engine: RuntimeContext) -> None:
    for n in range(3):
        (engine.workspace / f"f{n}.txt").write_text("".join(f"hit {i}\n" for i in range(150)))
    result = search.grep("hit", ctx=engine)
    lines = result.content.split("\n")
    assert len(lines) == 201
    assert lines[0] == "f0.txt:1:hit 0" and lines[199] == "f1.txt:50:hit 49"
    assert lines[-1] == "[450 matching lines in 3 files; showing the first 200. Narrow the pattern, path or glob]"
    assert result.details["truncated"] is True


def test_grep_cuts_long_matching_lines(engine: RuntimeContext) -> None:
    (engine.workspace / "min.js").write_text("var a='" + "x" * 5000 + "';needle\n")
    first = search.grep("needle", ctx=engine).content.split("\n")[0]
    assert first.startswith("min.js:1:var a='xxx") and first.endswith(" ...")
    assert len(first) < 320


def test_grep_boundary(engine: RuntimeContext, tree: Path, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        search.grep("root", path="/etc", ctx=engine)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x.txt").write_text("TODO outside\n")
    (tree / "linked").symlink_to(outside, target_is_directory=True)
    assert "outside" not in search.grep("TODO", ctx=engine).content


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data)


def test_only_gitignore_files_inside_the_workspace_count(engine: RuntimeContext, temp_home: Path) -> None:
    """Not a .gitignore above the workspace, nor git's global or per-repository excludes, nor .ignore."""
    root = engine.workspace
    write_tree(root.parent, {".gitignore": "*.txt\n"})
    write_tree(temp_home, {".config/git/ignore": "b.txt\n"})
    write_tree(root, {"a.txt": "hit\n", "b.txt": "hit\n", "c.txt": "hit\n", "d.txt": "hit\n",
                 ".ignore": "c.txt\n", ".git/info/exclude": "d.txt\n"})
    assert search.grep("hit", ctx=engine).content.split("\n") == [
        "a.txt:1:hit", "b.txt:1:hit", "c.txt:1:hit", "d.txt:1:hit", "[4 matching lines in 4 files]"]
    assert search.glob("*.txt", ctx=engine).content == "a.txt\nb.txt\nc.txt\nd.txt"


def test_gitignore_of_parent_folders_applies_to_a_subfolder_search(engine: RuntimeContext) -> None:
    write_tree(engine.workspace, {".gitignore": "sub/gen/\n*.log\n!keep.log\n\\#draft.py\n",
                             "sub/gen/x.py": "hit\n", "sub/a.log": "hit\n", "sub/keep.log": "hit\n",
                             "sub/#draft.py": "hit\n", "sub/ok.py": "hit\n"})
    # (!negations are not supported, as documented: keep.log stays ignored.)
    assert search.grep("hit", path="sub", ctx=engine).content.split("\n") == [
        "sub/ok.py:1:hit", "[1 matching line in 1 file]"]
    assert search.glob("*", path="sub", ctx=engine).content == "sub/ok.py"
    assert search.glob("*", ctx=engine).content == "sub/ok.py"


def test_grep_glob_does_not_bring_back_hidden_or_ignored_files(engine: RuntimeContext, tree: Path) -> None:
    write_tree(tree, {".env.log": "TODO hidden\n", "gen.log/x.log": "TODO in an ignored folder\n"})
    assert search.grep("TODO", glob="*.log", ctx=engine).content == (
        "No matches for 'TODO' in the workspace root (files matching '*.log').")


def test_only_folders_named_node_modules_are_skipped(engine: RuntimeContext) -> None:
    write_tree(engine.workspace, {"node_modules": "hit\n", "lib/__pycache__": "hit\n", "__pycache__/x": "hit\n"})
    assert search.grep("hit", ctx=engine).content.split("\n") == [
        "lib/__pycache__:1:hit", "node_modules:1:hit", "[2 matching lines in 2 files]"]
    assert search.glob("*", ctx=engine).content == "lib/__pycache__\nnode_modules"


def test_lines_end_at_newline(engine: RuntimeContext) -> None:
    """As in rg and grep: a CR is part of the line (`$` is not before a CRLF), only not shown at its end."""
    write_tree(engine.workspace, {"crlf.txt": b"one\r\ntwo\rthree\r\nfour\n"})
    assert search.grep("t", ctx=engine).content.split("\n") == [
        "crlf.txt:2:two\rthree", "[1 matching line in 1 file]"]
    assert search.grep("four", ctx=engine).content.startswith("crlf.txt:3:four\n")
    assert search.grep(r"one\r$", ctx=engine).content.startswith("crlf.txt:1:one\n")
    assert search.grep("one$", ctx=engine).content.startswith("No matches")


def test_binary_means_a_nul_in_the_first_8_kb(engine: RuntimeContext) -> None:
    write_tree(engine.workspace, {
        "early.txt": b"hit\n\x00\nhit\n",
        "late.txt": b"hit\n" + b"x\n" * 5000 + b"\x00\nhit\n",  # NUL at 10 KB: text
        "later.txt": b"hit\n" + b"x\n" * 50000 + b"\x00hit\n",  # NUL at 100 KB
        "utf16.txt": "hit\n".encode("utf-16"),  # NUL bytes: binary, whatever its BOM says
        "utf8bom.txt": "\ufeffhit\n".encode(),
    })
    assert search.grep("hit", ctx=engine).content.split("\n") == [
        "late.txt:1:hit", "late.txt:5003:hit", "later.txt:1:hit", "later.txt:50002:\x00hit",
        "utf8bom.txt:1:\ufeffhit", "[5 matching lines in 3 files]"]
    assert search.grep("hit", path="early.txt", ctx=engine).content == "No matches for 'hit' in early.txt."


def test_files_over_the_size_limit_are_skipped(engine: RuntimeContext) -> None:
    big = "hit\n" + "x" * search.MAX_FILE_BYTES
    write_tree(engine.workspace, {"big.txt": big, "small.txt": "hit\n"})
    assert search.grep("hit", ctx=engine).content.startswith("small.txt:1:hit\n[1 matching")
    assert search.grep("hit", path="big.txt", ctx=engine).content == "No matches for 'hit' in big.txt."
    assert search.glob("*.txt", ctx=engine).content == "small.txt"


@pytest.mark.parametrize(("pattern", "line"), [
    (r"bar\Z", "foobar"),  # rg has no \Z
    ("[[:alpha:]]", "x:]"),  # Python reads "[[:alpha:]" as a set, then "]"
    (r"\<b", "a <b>"),  # a literal "<" in Python, a word start in rg 14
    ("a{,2}b", "aab"),
])
def test_pattern_syntax_is_python_re(engine: RuntimeContext, pattern: str, line: str) -> None:
    write_tree(engine.workspace, {"f.txt": f"nothing\n{line}\n", "g.txt": "zzz\n"})
    assert search.grep(pattern, ctx=engine).content.split("\n") == [
        f"f.txt:2:{line}", "[1 matching line in 1 file]"]


# Python's reading of each pattern, checked line by line against what grep finds on both engines.
_READINGS = [
    r"[^\W\d]+_", r"\w+é", r"(?a)\w+é", r"\bfoo\b", r"\Bo", r"(?a)o\b", r"(?x) a \  b  # comment",
    r"(?i)A(?-i:B)c", r"(?i:FOO)bar", "x|", r"\Ax", r"x\Z", r"^$", r"[\d-]+", r"[]a]", r"[a\]]", r"\$\d",
    r"[\x00-\x1f]", r"\.", "a\nb", "[\n]", "[^\n]z", r"[^\s]{3}", r"\s\S", "\x1cq", r"a{2,}?", r"a{0}b",
    r"(?:)", r"()x", r"[[:alpha:]]", r"\<b", r"a{,2}b", "é+", "(?i)É", r"[é-ü]", r"\d\D", "#", r"\{x\}", ".*",
]
_LINES = ["foobar", "foo bar", "aab", "a  b", "AbC", "ABC", "x:]", "a <b>", "café_1", "x", "", "a-1 $5",
          "]", "a.b", "\x1cq", "tab\there", "{x}", "ÉCOLE école", "1a2b", "#", "zz z", "xab"]


@pytest.mark.parametrize("pattern", _READINGS)
def test_rg_reads_patterns_as_python_does(engine: RuntimeContext, pattern: str) -> None:
    """rg runs rg_regex(pattern), rewritten from Python's parse of it: both engines find what re finds."""
    (engine.workspace / "f.txt").write_text("".join(line + "\n" for line in _LINES))
    rx = re.compile(pattern)
    expected = [f"f.txt:{n}:{line}" for n, line in enumerate(_LINES, 1) if rx.search(line)]
    content = search.grep(pattern, ctx=engine).content.split("\n")
    assert content[:-1] == expected or (not expected and content[0].startswith("No matches"))


BACKTRACKING_ONLY = [
    ("foo(?=bar)", "look-ahead"), ("foo(?!bar)", "look-ahead"), ("(?<=a)b", "look-behind"),
    (r"(o)\1", "backreferences"), ("(?P<q>o)(?P=q)", "backreferences"), ("(a)?(?(1)b|c)", "conditional"),
    (r"(a+)+(?=b)c", "look-ahead"),
    # Python 3.10's re has no atomic groups or possessive quantifiers: those patterns are plain errors there.
    *([("(?>a+)b", "atomic groups"), ("a++b", "possessive")] if sys.version_info >= (3, 11) else []),
]


@pytest.mark.parametrize(("pattern", "construct"), BACKTRACKING_ONLY)
def test_backtracking_only_constructs_are_refused_by_name(engine: RuntimeContext, pattern: str,
                                                          construct: str) -> None:
    """Neither engine runs them (rg cannot, and Python would only on a backtracking engine): the same
    error on both, naming the construct so the model can rewrite the pattern."""
    (engine.workspace / "f.txt").write_text("foobar\n")
    with pytest.raises(ToolError, match=f"grep does not support {construct}.*Rewrite the pattern"):
        search.grep(pattern, ctx=engine)


_CATASTROPHE = textwrap.dedent("""
    import json, sys, threading, time
    from pathlib import Path
    from nami_yaml.builtins.search import grep
    from nami_yaml.errors import ToolError
    from nami_yaml.runtime import RuntimeContext, ToolSettings

    workspace, path_env, timeout, cancel_after = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
    ctx = RuntimeContext(workspace=workspace, settings=ToolSettings(default_timeout=timeout),
                         host_env={"PATH": path_env}, spill_dir=workspace / ".spill")
    ticks = []
    def tick():  # runs only while the search leaves the GIL free
        while True:
            ticks.append(time.monotonic())
            time.sleep(0.05)
    threading.Thread(target=tick, daemon=True).start()
    if cancel_after != "-":
        timer = threading.Timer(float(cancel_after), ctx.cancel.set)
        timer.daemon = True
        timer.start()
    results = {}
    for pattern in (r"(a+)+(?=b)c", r"(a+)+$"):
        started, count = time.monotonic(), len(ticks)
        try:
            outcome = grep(pattern, ctx=ctx).content
        except ToolError as exc:
            outcome = "error: " + str(exc)
        results[pattern] = [outcome, time.monotonic() - started, len(ticks) - count]
    json.dump(results, sys.stdout)
""")


@pytest.mark.parametrize("stop", ["timeout", "cancel"])
def test_catastrophic_patterns_cannot_freeze_the_process(engine: RuntimeContext, stop: str) -> None:
    """(a+)+(?=b)c is refused at once; (a+)+$ runs on rg in no time, and on the Python engine (in a child
    process) is stopped by the tool timeout or the cancel switch while the caller's threads keep running.
    In a subprocess with its own timeout, so a regression fails instead of hanging the suite."""
    (engine.workspace / "f.txt").write_text("a" * 60 + "b\n")
    timeout, cancel_after = ("2", "-") if stop == "timeout" else ("600", "1.5")
    out = subprocess.run([sys.executable, "-c", _CATASTROPHE, str(engine.workspace), engine.host_env["PATH"],
                          timeout, cancel_after], capture_output=True, text=True, timeout=60, check=True)
    results = json.loads(out.stdout)
    refused, refused_after, _ = results[r"(a+)+(?=b)c"]
    assert refused.startswith("error: grep does not support look-ahead") and refused_after < 5
    outcome, seconds, ticks = results[r"(a+)+$"]
    if search._ripgrep(engine):
        assert outcome == "No matches for '(a+)+$' in the workspace root."
    else:
        expected = "timed out after 2 s" if stop == "timeout" else "interrupted"
        assert outcome.startswith(f"error: search stopped: {expected}")
        assert ticks >= 10  # the GIL stayed free: the other thread ran all along


def test_a_named_fifo_is_skipped_not_waited_on(engine: RuntimeContext) -> None:
    os.mkfifo(engine.workspace / "pipe")
    assert search.grep("x", path="pipe", ctx=engine).content == "No matches for 'x' in pipe."


def test_no_regex_runs_in_process(engine: RuntimeContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both engines, folders and single files alike: Python's re never matches in the tool's own process
    (with rg, rg does all of it; without, a child process does)."""
    write_tree(engine.workspace, {"a.txt": "hit\n", "late.txt": b"hit\n" + b"x\n" * 5000 + b"\x00\nhit\n"})

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("a regex was matched in the tool's process")

    from nami_yaml.builtins import search_python

    # Patched where they are called from, so a regression that matched in-process would hit them.
    monkeypatch.setattr(search_python, "_grep_python", forbidden)
    monkeypatch.setattr(search_python, "_search_file", forbidden)
    assert search.grep("hit", ctx=engine).content.split("\n") == [
        "a.txt:1:hit", "late.txt:1:hit", "late.txt:5003:hit", "[3 matching lines in 2 files]"]
    assert search.grep("hit", path="late.txt", ctx=engine).content.split("\n") == [
        "late.txt:1:hit", "late.txt:5003:hit", "[2 matching lines in 1 file]"]


def test_pattern_errors_read_the_same(engine: RuntimeContext) -> None:
    (engine.workspace / "f.txt").write_text("a\n")
    with pytest.raises(ToolError, match=r"invalid regular expression '\(unclosed': missing \)"):
        search.grep("(unclosed", ctx=engine)
    with pytest.raises(ToolError, match=r"invalid regular expression '\\\\z'"):
        search.grep(r"\z", ctx=engine)
    assert search.grep("a\nb", ctx=engine).content.startswith("No matches")  # lines hold no newline


def test_grep_counts_long_lines_exactly(engine: RuntimeContext) -> None:
    """Megabyte-long minified lines neither fill rg's output cap nor change the count."""
    for name in ("a.js", "b.js", "c.js"):
        (engine.workspace / name).write_text(("x" * 1_000_000 + "needle\n") * 2)
    lines = search.grep("needle", ctx=engine).content.split("\n")
    assert lines[-1] == "[6 matching lines in 3 files]"
    assert [line.split(":")[:2] for line in lines[:-1]] == [
        [name, n] for name in ("a.js", "b.js", "c.js") for n in ("1", "2")]
    assert all(len(line) < 320 and line.endswith("x ...") for line in lines[:-1])


def test_rg_output_parses_into_the_same_format(ctx: RuntimeContext) -> None:
    """The ripgrep engine's parser, fed real `rg --null --line-number --binary` output shapes."""
    src = ctx.workspace / "src"
    src.mkdir()
    (src / "late.txt").write_bytes(b"x = 1\n" * 2000 + b"\x00 x = 2\n")  # NUL after 8 KB: text
    (src / "bin.dat").write_bytes(b"x = 1\x00\n")
    rg_out = ("./src/a.py\x003:def f():\n"
              "./src/b:c.py\x0010:x = 'a:b'\n"
              "... [1,234 bytes omitted; full output: /tmp/x] ...\n"
              "./src/bin.dat: binary file matches (found \"\\0\" byte around offset 5)\n"
              "./src/.hidden.py\x001:x = 3\n"
              "./src/late.txt\x001:x = 1\n"
              "./src/late.txt: binary file matches (found \"\\0\" byte around offset 12000)\n"
              "./src/../../escape.txt\x001:nope\n")
    asked: list[list[Path]] = []

    def as_text(files: list[Path]) -> dict[Path, list[tuple[int, str]]]:
        asked.append(files)
        return {src / "late.txt": [(2001, "\x00 x = 2")]}

    found = parse_rg_matches(rg_out, src, None, ctx, as_text)
    assert found.lines == ["src/a.py:3:def f():", "src/b:c.py:10:x = 'a:b'", "src/late.txt:2001:\x00 x = 2"]
    assert found.total == 3 and found.files == 3
    assert asked == [[src / "late.txt"]]  # bin.dat has its NUL in the first 8 KB: binary, not searched
    only_b = parse_rg_matches(rg_out, src, compile_glob("b*"), ctx)
    assert only_b.lines == ["src/b:c.py:10:x = 'a:b'"]


# ---------------------------------------------------------------- glob


def test_glob_by_name_at_any_depth(engine: RuntimeContext, tree: Path) -> None:
    assert search.glob("*.py", ctx=engine).content.split("\n") == [
        "src/app.py", "src/util/helpers.py", "tests/test_app.py"]


def test_glob_anchored_patterns_and_braces(engine: RuntimeContext, tree: Path) -> None:
    assert search.glob("src/*.py", ctx=engine).content == "src/app.py"
    assert search.glob("src/**/*.{py,yaml}", ctx=engine).content.split("\n") == [
        "src/app.py", "src/util/data.yaml", "src/util/helpers.py"]
    assert search.glob("*.py", path="src/util", ctx=engine).content == "src/util/helpers.py"
    assert search.glob("test_[a-z]*.py", ctx=engine).content == "tests/test_app.py"


def test_glob_skips_and_explicit_hidden_path(engine: RuntimeContext, tree: Path) -> None:
    everything = search.glob("**", ctx=engine).content
    for skipped in (".hidden", "node_modules", "build/", "debug.log", ".gitignore"):
        assert skipped not in everything
    assert "src/blob.bin" in everything  # binary files are still files
    assert search.glob("*.py", path=".hidden", ctx=engine).content == ".hidden/secret.py"


def test_glob_caps_with_count(engine: RuntimeContext) -> None:
    (engine.workspace / "many").mkdir()
    for i in range(620):
        (engine.workspace / "many" / f"{i:04d}.txt").write_text("")
    result = search.glob("*.txt", ctx=engine)
    lines = result.content.split("\n")
    assert len(lines) == 501
    assert lines[0] == "many/0000.txt"
    assert lines[-1] == "[620 files match; showing the first 500. Narrow the pattern or path]"


def test_glob_errors(engine: RuntimeContext, tree: Path) -> None:
    assert search.glob("*.rs", ctx=engine).content == "No files match '*.rs' in the workspace root."
    with pytest.raises(ToolError, match="relative"):
        search.glob("/etc/*", ctx=engine)
    with pytest.raises(ToolError, match="not a folder"):
        search.glob("*", path="README.md", ctx=engine)
    with pytest.raises(ToolError, match="outside the workspace"):
        search.glob("*", path="..", ctx=engine)


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
    ("\\*.py", "*.py", True),  # a backslash escapes, as in .gitignore files and rg
    ("\\*.py", "a.py", False),
])
def test_compile_glob(pattern: str, path: str, expected: bool) -> None:
    assert compile_glob(pattern)(path) is expected


def test_cancel_stops_a_search(engine: RuntimeContext) -> None:
    (engine.workspace / "a.txt").write_text("needle\n")
    engine.cancel.set()
    with pytest.raises(ToolError, match="interrupted"):
        search.grep("needle", ctx=engine)
    with pytest.raises(ToolError, match="interrupted"):
        search.glob("*.txt", ctx=engine)
