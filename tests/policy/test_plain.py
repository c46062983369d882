"""An allow rule matches a command only when nami reads it as plainly what it says (issue 23, items 1 and 2).

Every word literal, every option one nami knows to be inert for that program (or named by the rule), no
operand that is code for the program. Each attack here is first run in a real bash, in a temporary
folder, to show what it does; then the policy must ask about it where an allow rule names the program.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from nami_yaml.agent.hooks import Decision
from nami_yaml.shell.plain import not_plain  # noqa: E402
from tests.programs import need

Decide = Callable[..., Decision]
ASKED_BY_RULES = ("ask", "command rules (agent.yaml)")


def run_in_bash(folder: Path, command: str) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    return subprocess.run([bash, "-c", command], cwd=folder, capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A folder with victim/x in it: the attacks below remove or overwrite it."""
    folder = tmp_path / "attack"
    (folder / "victim").mkdir(parents=True)
    (folder / "victim" / "x").write_text("precious\n")
    return folder


def harmed(folder: Path) -> bool:
    """victim/x removed or overwritten, or a file `pwned` made."""
    x = folder / "victim" / "x"
    return not x.exists() or x.read_text() != "precious\n" or (folder / "pwned").exists()


# -- item 1: bash builtins that run code hidden in words -------------------------------------------------

ALLOW_BUILTINS = "  - tool: bash\n    command: [test, printf, ls, echo]\n    decision: allow\n"
EXEC_ALLOWED = "permissions: {exec: allow}\n"  # what no rule allows would run: only the rules stand between

HIDDEN_CODE = [
    "test -v 'a[$(rm victim/x; id > pwned)]'",
    "[ -v 'a[$(rm victim/x; id > pwned)]' ]",
    "[[ -v 'a[$(rm victim/x; id > pwned)]' ]]",
    "printf -v 'a[$(rm victim/x)]' x",
    "printf -v 'BASH_CMDS[ls]' %s /bin/rm; ls -rf victim",
    "hash -p /bin/rm ls; ls -rf victim",
    "echo x | read 'a[$(rm victim/x)]'",
    "echo x | mapfile -C 'rm victim/x #' -c 1 lines",
    "echo x | readarray -C 'rm victim/x #' -c 1 lines",
    "let 'a[$(rm victim/x)]'",
    "declare 'a[$(rm victim/x)]=1'",
    "typeset 'a[$(rm victim/x)]=1'",
    "declare -i n='a[$(rm victim/x)]'",
    "f() { local 'a[$(rm victim/x)]=1'; }; f",
    "shopt -s expand_aliases; alias ls='rm -rf'\nls victim",
    "BASH_CMDS[ls]=/bin/rm; ls -rf victim",
    "BASH_ALIASES[ls]='rm -rf'; shopt -s expand_aliases\nls victim",
    "compgen -C 'rm victim/x' x",
    "PS4='$(rm victim/x)'; set -x; ls",
    "x='a[$(rm victim/x)]'; echo $((x))",
]


@pytest.mark.parametrize("command", HIDDEN_CODE)
def test_bash_runs_the_code_hidden_in_these_words(victim: Path, command: str) -> None:
    run_in_bash(victim, command)
    assert harmed(victim), command


@pytest.mark.parametrize("command", HIDDEN_CODE)
def test_a_builtin_that_runs_code_in_its_words_is_asked_about(rules: Callable[..., Decide], command: str) -> None:
    decision = rules(ALLOW_BUILTINS, extra=EXEC_ALLOWED)("bash", command=command)
    assert (decision.action, decision.source) == ASKED_BY_RULES, (command, decision)


@pytest.mark.parametrize("command", ["test -f README.md", "test -n x -a -d src", "test ! -e x", "printf '%s\\n' a b",
                                     "printf -- '-%s' x", "echo -n hi", "ls -la src", "test x = y"])
def test_the_plain_forms_of_these_builtins_are_allowed(rules: Callable[..., Decide], command: str) -> None:
    decision = rules(ALLOW_BUILTINS)("bash", command=command)
    assert decision.action == "allow", (command, decision)


@pytest.mark.parametrize("prefix", ["read", "mapfile", "readarray", "let", "declare", "typeset", "hash", "alias",
                                    "enable", "shopt", "compgen", "printf -v", "test -v", "unset"])
def test_nami_check_refuses_an_allow_for_a_builtin_that_runs_code(workdir: Path, write_rules: Callable[..., None],
                                                                  prefix: str) -> None:
    write_rules(f"  - tool: bash\n    command: ['{prefix}']\n    decision: allow\n")
    result = subprocess.run(["nami", "check"], cwd=workdir, capture_output=True, text=True)
    assert result.returncode == 1, result.stdout
    # declare, typeset and unset are not even simple commands to bash's grammar.
    assert (f"an allow rule cannot allow {prefix!r}" in result.stderr
            or f"{prefix!r} is not a plain command: it" in result.stderr), result.stderr


# -- item 2: programs that run programs through an option or an argument --------------------------------

PROGRAMS = ["rg", "man", "git", "kubectl", "less", "tar", "zip", "awk", "sed", "find", "vim", "sort", "ls", "cat",
            "head", "grep", "pytest", "rm"]
ALLOW_PROGRAMS = f"  - tool: bash\n    command: [{', '.join(PROGRAMS)}]\n    decision: allow\n"

# (program the attack needs, setup run first, the attack): each ran its hidden program under the allow.
RUNS_A_PROGRAM = [
    ("rg", "printf 'rm -rf victim\\n' > notes", "rg --pre=sh . notes"),
    ("rg", "printf 'rm -rf victim\\n' > notes", "rg --pre sh . notes"),
    ("git", "git init -q . && git add victim && git -c user.name=a -c user.email=a@b commit -qm x",
     "git -c alias.st='!rm -rf victim' st"),
    ("git", "git init -q .", "git ls-remote --upload-pack='rm -rf victim' ."),
    ("tar", "tar -cf a.tar victim", "tar -xf a.tar --to-command='rm -rf victim'"),
    ("tar", "", "tar -cf b.tar --use-compress-program='sh -c \"rm -rf victim; cat\"' victim"),
    ("tar", "", "tar cIf 'sh -c \"rm -rf victim; cat\"' b.tar victim"),  # old-style options: no dash
    ("zip", "zip -qr z.zip victim", "zip -T -TT 'rm -rf victim' z.zip"),
    ("awk", "", "awk 'BEGIN{system(\"rm -rf victim\")}'"),
    ("awk", "", "echo rm -rf victim | awk '{print | \"sh\"}'"),
    ("sed", "echo x > f", "sed -n '1e rm -rf victim' f"),
    ("sed", "echo 'rm -rf victim' > f", "sed 's/^//e' f"),
    ("sed", "echo x > f", "sed -n 'w victim/x' f"),
    ("find", "", "find . -maxdepth 0 -fprint victim/x"),
    ("find", "", "find victim -exec rm -rf {} +"),
    ("vim", "echo x > f", "vim -es -c '!rm -rf victim' -c q f"),
    ("vim", "echo x > f", "vim -es '+!rm -rf victim' '+q' f"),
    ("sort", "", "sort -o victim/x /dev/null"),
    ("git", "git init -q .", "git diff --output=victim/x"),
    ("kubectl", "printf '%s' \"$KUBECONFIG_EXEC\" > evil.yaml", "kubectl --kubeconfig=evil.yaml get pods"),
    ("kubectl", "printf '%s' \"$KUBECONFIG_EXEC\" > evil.yaml", "kubectl get pods --kubeconfig evil.yaml"),
]
# A kubeconfig whose user is an exec credential plugin: kubectl runs it before any request.
KUBECONFIG_EXEC = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
users:
- name: u
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: sh, args: ["-c", "rm -rf victim"],
           interactiveMode: Never}
"""


@pytest.mark.parametrize(("program", "setup", "command"), RUNS_A_PROGRAM)
def test_these_options_and_operands_run_a_program(victim: Path, monkeypatch: pytest.MonkeyPatch, program: str,
                                                  setup: str, command: str) -> None:
    need(program)
    monkeypatch.setenv("KUBECONFIG_EXEC", KUBECONFIG_EXEC)
    if setup:
        assert run_in_bash(victim, setup).returncode == 0, setup
    run_in_bash(victim, command)
    assert harmed(victim), command


ASKED_TOO = [  # more of the same, from the programs' manuals (not run here: they need a terminal, a server…)
    "man -P 'rm -rf victim' ls", "man --pager='rm -rf victim' ls", "man -Hfirefox ls",
    "git -c core.pager='rm -rf victim' log", "git --upload-pack=x fetch", "git log --output=x",
    "less -k evil.lesskey f", "less '+!rm -rf victim' f", "less --lesskey-src=evil f",
    "rg -n x --pre=./pre.sh src", "rg --pre-glob '*' --pre sh x", "sort --compress-program=sh x",
    "find . -fprintf out '%p'", "find . -ok rm {} ;", "find . -delete",
    "awk -f prog.awk f", "awk '{print > \"out\"}' f", "awk '{ \"date\" | getline d }' f",
    "awk '@load \"x\"' f", "sed -i s/a/b/ f", "sed -f script.sed f", "sed 's/a/b/w out' f", "sed 'r x' f",
    "sed --expression='1e id' f", "sed -e p -e '1e id' f",
    "vim +'!id' f", "vim --cmd '!id' f", "vim -S x.vim f",
    "tar -tf a.tar -I 'sh -c id'", "tar -tf a.tar --checkpoint-action=exec=id",
    "kubectl get pods -v=9", "kubectl get pods --server https://evil", "kubectl get pods --token x",
    "ls --unknown-option", "cat -Z f", "head --follow f", "pytest --pdb", "pytest -c evil.ini",
    "rm -rf build", "git status --porcelain=v2 --unknown",
    "git remote add x https://evil", "git branch new", "git tag v1", "kubectl config set-context x",
]


@pytest.mark.parametrize("command", [c for _, _, c in RUNS_A_PROGRAM] + ASKED_TOO)
def test_a_program_that_would_run_or_write_something_is_asked_about(rules: Callable[..., Decide],
                                                                    command: str) -> None:
    decision = rules(ALLOW_PROGRAMS)("bash", command=command)
    assert decision.action == "ask", (command, decision)


PLAINLY = [
    "rg -n TODO src", "rg -i --hidden -g '*.py' -e 'def x' .", "rg --files", "rg -uu -l x", "rg -C3 x src",
    "git status --short", "git log --oneline -5", "git log -n 3 --format='%h %s' -- src",
    "git diff --stat HEAD~1", "git show HEAD:README.md", "git --no-pager log -p", "git branch -a",
    "git blame -L 1,5 README.md", "git ls-files -m",
    "kubectl get pods -n prod -o yaml", "kubectl -n prod get deploy web -o jsonpath='{.spec}'",
    "kubectl describe pod web-1", "kubectl logs -f --tail=50 pod/web-1 -c app", "kubectl get pods -A -l app=web",
    "sed -n '1,20p' f", "sed -n 10p f", "sed 's/a/b/g' f", "sed -E 's|x|y|2;/^#/d' f", "sed '$!N;P;D' f",
    "awk '{print $1}' f", "awk -F: -v OFS=, '{print $1, $NF}' /etc/passwd", "awk 'NR==1' f",
    "find . -name '*.py' -type f", "find src -maxdepth 2 -newer setup.py -print0", "find . ! -path './.git/*'",
    "tar -tf a.tar", "tar -tvzf a.tgz", "man ls", "man 5 crontab", "man -k printf",
    "ls -la", "ls -1 --color=never src", "cat -n f", "head -n 5 f", "head -5 f", "grep -rn --include='*.py' x .",
    "pytest -q -x tests/test_api.py -k 'not slow' -p no:cacheprovider", "less f", "vim f", "rm build",
    "sort -u -k2,2 f",
]


@pytest.mark.parametrize("command", PLAINLY)
def test_a_command_nami_reads_as_plainly_what_it_says_is_allowed(rules: Callable[..., Decide], command: str) -> None:
    decision = rules(ALLOW_PROGRAMS)("bash", command=command)
    assert decision.action == "allow", (command, decision)


def test_an_option_the_rule_names_is_allowed(rules: Callable[..., Decide]) -> None:
    """An option nami does not know to be inert is allowed where the rule's own prefix names it."""
    decide = rules("  - tool: bash\n    command: [rm -rf build, sed -i, git commit -m]\n"
                   "    decision: allow\n")
    assert decide("bash", command="rm -rf build").action == "allow"
    assert decide("bash", command="rm -rf build dist").action == "allow"  # more operands
    assert decide("bash", command="rm -rf src").action == "ask"  # not the named words
    assert decide("bash", command="rm -rf build -v").action == "ask"  # an option the rule does not name
    assert decide("bash", command="sed -i 's/a/b/' f").action == "allow"
    assert decide("bash", command="sed -i '1e id' f").action == "ask"  # the script is still read
    assert decide("bash", command="git commit -m 'fix: x'").action == "allow"


def test_an_unknown_program_is_allowed_for_its_operands_only(rules: Callable[..., Decide]) -> None:
    decide = rules("  - tool: bash\n    command: [make, ./build.sh]\n    decision: allow\n")
    assert decide("bash", command="make test lint").action == "allow"
    for command in ("make -j4 test", "make --eval='x:;id' x", "./build.sh --release", "make +x", "make -- x"):
        assert decide("bash", command=command).action == "ask", command


@pytest.mark.parametrize("prefix", ["rg --pre=cat", "rg --pre", "man -P cat", "kubectl --kubeconfig=x.yaml",
                                    "vim -c", "less -k", "tar --to-command=cat", "git -c core.pager=cat"])
def test_nami_check_refuses_an_allow_that_names_an_option_that_runs_code(workdir: Path,
                                                                         write_rules: Callable[..., None],
                                                                         prefix: str) -> None:
    write_rules(f"  - tool: bash\n    command: ['{prefix}']\n    decision: allow\n")
    result = subprocess.run(["nami", "check"], cwd=workdir, capture_output=True, text=True)
    assert result.returncode == 1, result.stdout
    assert f"an allow rule cannot allow {prefix!r}" in result.stderr


@pytest.mark.parametrize(("words", "named", "why"), [
    (("ls", "-la"), 1, None),
    (("ls", "-Q", "--zzz"), 1, "`--zzz` is not an option nami knows to be inert for ls"),
    (("head", "-n", "-5"), 1, None),  # the value of -n, not an option
    (("grep", "-e", "--pre=x", "f"), 1, None),
    (("rm", "-rf", "x"), 1, "`-rf` is not an option nami knows to be inert for rm"),
    (("rm", "-rf", "x"), 2, None),
    (("sed", "1e id", "f"), 1, "the sed script `1e id` is not one nami reads as inert"),
    (("git", "push", "--force"), 2, "`--force` is not an option nami knows to be inert for git push"),
    (("git", "push", "origin"), 1, None),
])
def test_not_plain_says_why(words: tuple[str, ...], named: int, why: str | None) -> None:
    assert not_plain(words, named) == why


def test_every_sed_script_read_as_inert_runs_in_seds_sandbox() -> None:
    """GNU sed --sandbox refuses e, r and w (and s///e, s///w): random scripts of sed's pieces that the
    reader accepts must all pass it (scripts sed rejects as malformed run nothing either way)."""
    need("sed")
    from random import Random

    from nami_yaml.shell.scripts import inert_sed

    version = subprocess.run(["sed", "--version"], capture_output=True, text=True)
    if "GNU" not in version.stdout:
        pytest.skip("--sandbox is GNU sed's")
    pieces = ["s", "/", "|", "x", "e", "w", "r", " ", ";", "\n", "p", "g", "[", "]", "\\", "1", "$", "!", "{", "}",
              ",", "y", "a", "i", "c", "#", ":", "b", "~", "^", "n", "N", "q", "I", "M", "W", "R", "F", "z", "=",
              "+", "l", "v", "0", "[:alpha:]", "\\n", "E", "Q", "T", "t", "D", "P", "G", "H", "h", "d", "m"]
    random = Random(20250602)
    accepted = 0
    for _ in range(4000):
        script = "".join(random.choice(pieces) for _ in range(random.randint(1, 12)))
        if not inert_sed(script):
            continue
        accepted += 1
        ran = subprocess.run(["sed", "--sandbox", "-n", "-e", script, "/dev/null"], capture_output=True, text=True)
        assert "sandbox" not in ran.stderr, (script, ran.stderr)
    assert accepted > 100
