"""Which commands run other commands, and which options make a harmless command run or write something.

Knowledge about programs, separate from the parsing in ``bash.py``: a prefix rule (``git``, ``find``) must
not allow ``git -c core.pager=CMD`` or ``find -exec``. A safety net for broad prefixes, not a complete list.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

Word = str | None  # a word's value after quote removal, or None when bash computes it (expansion, glob…)

# Commands whose arguments are (or contain) another command: a prefix rule never allows them, since the
# command they run is not the one the rule names.
RUNNERS = frozenset({
    "bash", "sh", "zsh", "dash", "ksh", "mksh", "yash", "fish", "csh", "tcsh", "busybox", "eval", "source", ".",
    "exec", "command", "builtin", "env", "xargs", "parallel", "sudo", "doas", "su", "runuser", "pkexec",
    "nohup", "nice", "ionice", "chrt", "taskset", "timeout", "time", "stdbuf", "unbuffer", "watch", "setsid",
    "chroot", "unshare", "nsenter", "flock", "script", "strace", "ltrace", "gdb", "systemd-run", "ssh",
    "trap", "coproc", "fc",
})
# Runners whose argument is a whole command line: parsed for hidden commands.
SHELL_STRING = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "yash", "eval", "su", "runuser", "watch",
                          "script", "flock", "ssh", "parallel", "busybox", "trap"})

# Options that make an otherwise harmless command run another program or write a file of its choosing.
# A safety net for broad prefixes (`git`, `find`), not a complete list: prefer narrow prefixes.
_EXEC_OPTIONS: dict[str, tuple[str, ...]] = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "git": ("--output", "--upload-pack", "--receive-pack", "--exec", "-O", "--open-files-in-pager",
            "--ext-diff", "--config-env", "--exec-path="),
    "python": ("-c",),  # python3, python3.12… too
    "perl": ("-e", "-E"), "ruby": ("-e",), "node": ("-e", "-p", "--eval", "--print"), "nodejs": ("-e", "-p"),
    "php": ("-r",),
    "tar": ("--to-command", "--checkpoint-action", "--use-compress-program", "-I", "--info-script",
            "--new-volume-script", "-F"),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "zip": ("-TT", "--unzip-command"),
    # pytest empties --basetemp (`--basetemp=$HOME`), writes reports and logs where it is told, moves its
    # cache (-o cache_dir=…, --rootdir) and uploads the session to a pastebin.
    "pytest": ("--basetemp", "--junitxml", "--junit-xml", "--log-file", "--debug", "-o", "--override-ini",
               "--rootdir", "--pastebin"),
    "sort": ("-o", "--output", "--compress-program"),
}
_EXEC_OPTIONS["py.test"] = _EXEC_OPTIONS["pytest"]
_PYTHON = re.compile(r"python[0-9.]*")
# git options that come before the sub-command and change what git runs or where it reads config from.
_GIT_GLOBAL = ("-c", "--config-env", "--exec-path=", "--git-dir", "--work-tree", "--namespace")
_GIT_GLOBAL_WITH_VALUE = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env",
                                    "--super-prefix"})

FIND_RUNS = frozenset(_EXEC_OPTIONS["find"][:4])  # -exec, -execdir, -ok, -okdir: the next word is a program


def command_problem(words: tuple[Word, ...]) -> str | None:
    if not words or words[0] is None:
        return None
    name = os.path.basename(words[0])
    if name in RUNNERS:
        return f"`{name}` runs another command"
    base = "python" if _PYTHON.fullmatch(name) else name
    for program, arguments in ((base, words[1:]), *_python_module(base, words)):
        for option in _EXEC_OPTIONS.get(program, ()):
            if any(w is not None and _is_option(w, option) for w in arguments):
                return f"`{program} {option}` runs a program or writes a file"
    if name == "git":
        for word in _git_global_options(words):
            for option in _GIT_GLOBAL:
                if _is_option(word, option):
                    return f"`git {option}` changes what git runs or which repository it reads"
    return None


def _python_module(name: str, words: tuple[Word, ...]) -> list[tuple[str, tuple[Word, ...]]]:
    """``python -m pytest …`` is pytest with the words after the module name."""
    if name != "python":
        return []
    for index, word in enumerate(words[1:-1], 1):
        if word == "-m":
            module = words[index + 1]
            return [(module, words[index + 2:])] if module is not None else []
    return []


def _is_option(word: str, option: str) -> bool:
    if option.endswith("="):
        return word.startswith(option)
    if option.startswith("--"):
        # git's parse-options and GNU getopt_long take any unambiguous beginning of a long option:
        # `git grep --open-files-in-pag=CMD` and `tar --to-comm=CMD` run CMD.
        name = word.split("=", 1)[0]
        return name == option or (len(name) > 2 and name.startswith("--") and option.startswith(name))
    if len(option) != 2:
        return word == option or word.startswith(option + "=")
    # A short option alone, with its value attached (-Ofoo) or in a cluster (python -Sc, rsync -avze).
    return word.startswith("-") and not word.startswith("--") and option[1] in word[1:]


def _git_global_options(words: tuple[Word, ...]) -> Iterator[str]:
    index = 1
    while index < len(words):
        word = words[index]
        if word is None or not word.startswith("-"):
            return
        yield word
        index += 2 if word in _GIT_GLOBAL_WITH_VALUE else 1
