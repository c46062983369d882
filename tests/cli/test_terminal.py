"""The terminal experience, in a real pseudo-terminal: rendered answers, diffs before edits, the spinner,
NO_COLOR, multi-line chat input and Ctrl-C during a streamed answer. The fake server answers through the
real openai SDK; pyte shows what a person would see on the screen."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from nami_yaml.agent.loop import INTERRUPTED_MARK
from nami_yaml.testing import FakeOpenAIServer, call, text, tool_calls
from tests.cli.terminal import COLOR_SGR, PROMPT, SGR, Terminal

ANSWER = """\
# Release notes

Version **2.1** fixes *three* bugs in `parse()`:

- a crash on empty input
- a leak in the [cache](https://example.com/cache)

```python
def parse(text):
    return text.split()
```

| Bug | Fixed |
|-----|:-----:|
| crash | yes |
| leak | yes |
"""

APP = 'def greet(name):\n    return "hello " + name\n\n\nprint(greet("world"))\n'
EDIT = {"path": "app.py", "old_text": '    return "hello " + name\n',
        "new_text": '    if not name:\n        raise ValueError("empty")\n    return f"hello {name}"\n'}


@pytest.fixture
def term() -> list[Terminal]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def start(opened: list[Terminal], server: FakeOpenAIServer, *args: str, cwd: Path,
          env: dict[str, str] | None = None) -> Terminal:
    terminal = Terminal(server, list(args), cwd, env)
    opened.append(terminal)
    return terminal


def test_answers_are_rendered_markdown_on_a_terminal(fake_openai: FakeOpenAIServer, workdir: Path,
                                                     term: list[Terminal]) -> None:
    fake_openai.add(text(ANSWER, chunk_delay=0.01))
    nami = start(term, fake_openai, "run", "what changed?", cwd=workdir)
    assert nami.finish() == 0
    screen = nami.text()
    assert "Release notes" in screen and "# Release" not in screen
    assert "Version 2.1 fixes three bugs in parse():" in screen  # no ** * ` left
    assert "• a crash on empty input" in screen
    assert "• a leak in the cache (https://example.com/cache)" in screen
    assert "def parse(text):" in screen and "```python" in screen
    assert "| crash |" not in screen and any(line.split() == ["crash", "yes"] for line in nami.lines())
    # Streamed line by line, yet every line is on the screen once: nothing printed twice into the scrollback.
    for line in ("Release notes", "• a crash on empty input", "def parse(text):"):
        assert sum(1 for shown in nami.lines() if shown.strip() == line) == 1, line
    assert "\x1b[1m" in nami.raw or "\x1b[1;" in nami.raw  # bold, really
    assert COLOR_SGR.search(nami.raw)  # highlighted code


def test_answers_are_plain_text_in_a_pipe(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text(ANSWER))
    env = dict(os.environ, NAMI_BASE_URL=fake_openai.base_url, NAMI_MODEL="fake-model", DEEPSEEK_API_KEY="k")
    result = subprocess.run([sys.executable, "-m", "nami_yaml", "run", "--color", "auto", "what changed?"],
                            cwd=workdir, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ANSWER  # the Markdown as the model wrote it
    assert "\x1b" not in result.stdout + result.stderr


def test_no_color_gives_plain_text_and_no_colour_anywhere(fake_openai: FakeOpenAIServer, workdir: Path,
                                                          term: list[Terminal]) -> None:
    (workdir / "app.py").write_text(APP)
    fake_openai.add(tool_calls(call("edit_file", EDIT), delay=0.5), text("Done: **greet** refuses empty names."))
    nami = start(term, fake_openai, "run", "fix greet", cwd=workdir, env={"NO_COLOR": "1"})
    nami.expect("no with a reason")
    nami.send("y")
    assert nami.finish() == 0
    assert not SGR.search(nami.raw), "an SGR sequence despite NO_COLOR"
    screen = nami.text()
    assert "Done: **greet** refuses empty names." in screen  # plain text, not rendered
    assert '+    if not name:' in screen  # the diff is there, uncoloured


def test_an_edit_approval_shows_the_diff_and_a_key_refuses(fake_openai: FakeOpenAIServer, workdir: Path,
                                                             term: list[Terminal]) -> None:
    (workdir / "app.py").write_text(APP)
    fake_openai.add(tool_calls(call("edit_file", EDIT)), text("Understood, I left it."))
    nami = start(term, fake_openai, "run", "fix greet", cwd=workdir)
    nami.expect("no with a reason")
    screen = nami.text()
    assert "edit app.py: +3 -1" in screen
    assert "@@ -1,5 +1,7 @@" in screen
    lines = nami.lines()
    at = lines.index('  -    return "hello " + name')
    assert lines[at - 1] == "   def greet(name):"  # context before the change
    assert lines[at + 1:at + 4] == ["  +    if not name:", '  +        raise ValueError("empty")',
                                    '  +    return f"hello {name}"']
    assert "\x1b[31m-    return" in nami.raw and "\x1b[32m+    if not name:" in nami.raw  # red and green
    nami.send("n")  # one key, no Enter
    assert nami.finish() == 0
    assert (workdir / "app.py").read_text() == APP
    assert "no with a reason: no" in nami.text()
    result = [m for m in fake_openai.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert result.startswith("Denied by the user")


def test_an_edit_approved_by_key_is_applied(fake_openai: FakeOpenAIServer, workdir: Path,
                                            term: list[Terminal]) -> None:
    (workdir / "app.py").write_text(APP)
    fake_openai.add(tool_calls(call("edit_file", EDIT)), text("Fixed."))
    nami = start(term, fake_openai, "run", "fix greet", cwd=workdir)
    nami.expect("no with a reason")
    nami.send("y")
    assert nami.finish() == 0
    assert 'raise ValueError("empty")' in (workdir / "app.py").read_text()
    assert "✓ edit_file" in nami.text()


def test_the_spinner_shows_while_waiting_and_is_gone_after_the_answer(fake_openai: FakeOpenAIServer, workdir: Path,
                                                                      term: list[Terminal]) -> None:
    fake_openai.add(tool_calls(call("bash", {"command": "sleep 1.2; echo slept"}), delay=1.0),
                    text("All done.", delay=1.0))
    nami = start(term, fake_openai, "run", "--yes", "wait", cwd=workdir)
    nami.expect(r"thinking · \d\.\ds · step 1")
    nami.expect(r"running bash · \d\.\ds · step 1")
    nami.expect(r"thinking · \d\.\ds · step 2 · [\d,]+ tokens")
    assert nami.finish() == 0
    screen = nami.text()
    assert "All done." in screen and "slept" in screen
    assert "thinking" not in screen and "running bash" not in screen  # erased, not left behind
    assert not any(frame in screen for frame in "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")


def test_chat_takes_pasted_and_alt_enter_lines_as_one_message(fake_openai: FakeOpenAIServer, workdir: Path,
                                                              term: list[Terminal]) -> None:
    fake_openai.add(text("Got the paste."), text("Got both lines."))
    nami = start(term, fake_openai, "chat", cwd=workdir)
    nami.expect(PROMPT)
    nami.send("\x1b[200~first pasted line\nsecond pasted line\x1b[201~")
    nami.send("\r")
    nami.expect("Got the paste.")
    nami.expect(PROMPT)
    nami.send("typed line\x1b\rnext line\r")  # Alt-Enter between them
    nami.expect("Got both lines.")
    nami.expect(PROMPT)
    nami.send("\x04")
    assert nami.finish() == 0
    users = [m["content"] for m in fake_openai.requests[1]["messages"] if m["role"] == "user"]
    assert users == ["first pasted line\nsecond pasted line", "typed line\nnext line"]


def test_ctrl_c_stops_a_streamed_answer_and_keeps_it(fake_openai: FakeOpenAIServer, workdir: Path,
                                                     term: list[Terminal]) -> None:
    slow = " ".join(f"word{n}" for n in range(60))
    fake_openai.add(text(slow, chunk_delay=0.15), text("Going on from there."))
    nami = start(term, fake_openai, "chat", cwd=workdir)
    nami.expect(PROMPT)
    nami.send("tell me everything\r")
    nami.expect("word3 ")
    nami.child.sendintr()
    nami.expect(r"\(interrupted\)")
    nami.expect(PROMPT)
    assert "word59" not in nami.text()
    nami.send("go on\r")
    nami.expect("Going on from there.")
    nami.expect(PROMPT)
    nami.child.sendintr()  # a Ctrl-C at the empty prompt asks ...
    nami.expect("Ctrl-C again")
    nami.child.sendintr()  # ... and a second one leaves
    assert nami.finish() == 0
    history = fake_openai.requests[1]["messages"]
    assert [m["role"] for m in history] == ["system", "user", "assistant", "user"]
    partial = history[2]["content"]
    assert partial.startswith("word0 word1 word2 word3") and partial.endswith(INTERRUPTED_MARK)
    assert "word59" not in partial
    shown = nami.text()
    assert partial.removesuffix(INTERRUPTED_MARK).strip() in shown.replace("\n", " ")  # what was seen is kept


@pytest.mark.parametrize("args", [["--help"], ["tools", "list"], ["run", "hi"], ["run", "--json", "hi"],
                                  ["chat"], ["run", "--color", "never", "hi"]])
def test_rich_is_imported_only_to_render_on_a_terminal(args: list[str], fake_openai: FakeOpenAIServer,
                                                       workdir: Path) -> None:
    fake_openai.add(text("**hi**"))
    code = ("import sys\nfrom nami_yaml.cli.main import cli\n"
            f"try:\n    cli({args!r}, prog_name='nami')\nexcept SystemExit:\n    pass\n"
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'markdown_it', 'pygments'))\n"
            "print('loaded:', loaded)")
    env = dict(os.environ, NAMI_BASE_URL=fake_openai.base_url, NAMI_MODEL="fake-model", DEEPSEEK_API_KEY="k")
    result = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=env, input="hello\n", capture_output=True,
                            text=True, timeout=60)
    assert result.stdout.strip().endswith("loaded: []"), result.stdout + result.stderr
    if args[0] == "run":
        assert "hi" in result.stdout  # it did answer, without rich


def test_rich_is_imported_on_a_terminal(fake_openai: FakeOpenAIServer, workdir: Path) -> None:
    fake_openai.add(text("**hi**"))
    code = ("import sys\nfrom nami_yaml.cli.main import cli\n"
            "try:\n    cli(['run', 'hi'], prog_name='nami')\nexcept SystemExit:\n    pass\n"
            "print('rich loaded:', 'rich.console' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    child = pexpect.spawn(sys.executable, ["-c", code], cwd=str(workdir), encoding="utf-8", timeout=30,
                          env=dict(env, NAMI_BASE_URL=fake_openai.base_url, NAMI_MODEL="fake-model",
                                   DEEPSEEK_API_KEY="k", TERM="xterm"))
    child.expect(pexpect.EOF)
    assert "rich loaded: True" in child.before  # the check above would pass vacuously otherwise
