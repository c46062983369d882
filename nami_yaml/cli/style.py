"""What the terminal gets: colours, rendered Markdown and a status line, or plain text.

One decision per process, from ``--color auto|always|never``, ``--plain``, ``NO_COLOR`` and whether each
stream is a terminal. Everything that prints for a person (answers, progress, approvals, the trust
summary) asks here, so ``NO_COLOR`` and ``--color never`` hold everywhere. Colours are a few SGR codes
written by hand: stderr styling never needs rich, which is imported only to render answers.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TextIO

import click

COLOR_MODES = ("auto", "always", "never")

_CODES = {"bold": "1", "dim": "2", "italic": "3", "red": "31", "green": "32", "yellow": "33", "blue": "34",
          "magenta": "35", "cyan": "36"}


@dataclass(frozen=True)
class Paint:
    """Wraps text in SGR codes when ``enabled``; returns it unchanged otherwise. Escape untrusted text
    (``display.visible``) before painting it: the codes added here are the only live ones."""

    enabled: bool

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def dim(self, text: str) -> str:
        return self(text, "dim")

    def bold(self, text: str) -> str:
        return self(text, "bold")

    def red(self, text: str) -> str:
        return self(text, "red")

    def green(self, text: str) -> str:
        return self(text, "green")

    def yellow(self, text: str) -> str:
        return self(text, "yellow")

    def cyan(self, text: str) -> str:
        return self(text, "cyan")


@dataclass(frozen=True)
class Terminal:
    """What each stream can take. ``markdown``: answers on stdout are rendered (rich); ``status``: a
    spinner and status line may be drawn on stderr; ``keys``: stdin is a terminal that can be read key
    by key (approvals)."""

    color_out: bool = False
    color_err: bool = False
    markdown: bool = False
    status: bool = False
    keys: bool = False
    plain: bool = False

    @property
    def out(self) -> Paint:
        return Paint(self.color_out)

    @property
    def err(self) -> Paint:
        return Paint(self.color_err)


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):  # a closed stream
        return False


def decide(color: str = "auto", plain: bool = False, *, env: dict[str, str] | None = None,
           stdin: TextIO | None = None, stdout: TextIO | None = None, stderr: TextIO | None = None) -> Terminal:
    """``--color always`` colours even a pipe (for ``less -R``); ``never``, ``NO_COLOR`` (under ``auto``)
    and a dumb terminal give plain answers; ``--plain`` turns off colours, rendering and the status line."""
    env = dict(os.environ) if env is None else env
    out_tty, err_tty = _isatty(stdout or sys.stdout), _isatty(stderr or sys.stderr)
    dumb = env.get("TERM") == "dumb"

    def colored(tty: bool) -> bool:
        if plain or color == "never":
            return False
        if color == "always":
            return True
        return tty and not dumb and not env.get("NO_COLOR")

    color_out = colored(out_tty)
    return Terminal(color_out=color_out, color_err=colored(err_tty), markdown=color_out,
                    status=err_tty and not dumb and not plain, keys=_isatty(stdin or sys.stdin) and err_tty,
                    plain=plain)


_current: Terminal | None = None


def configure(color: str = "auto", plain: bool = False) -> Terminal:
    """Decide for this process (the run and chat commands call it with their options)."""
    global _current
    _current = decide(color, plain)
    return _current


def terminal() -> Terminal:
    """This process's decision; from the environment alone when no command made one."""
    return _current if _current is not None else configure()


color_option = click.option("--color", type=click.Choice(COLOR_MODES), default="auto", show_default=True,
                            help="Colours and rendered Markdown: auto (on a terminal, unless $NO_COLOR is set), "
                                 "always (even in a pipe), never.")
plain_option = click.option("--plain", is_flag=True,
                            help="Plain text: no colours, no rendered Markdown, no spinner (screen readers, logs).")
