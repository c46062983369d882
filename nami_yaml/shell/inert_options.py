"""The options nami knows to be inert, per program: the only ones an allow rule matches without naming them.

An option is *inert* when it changes only what the program reads or how it prints: it does not make the
program run another program or code, write a file, or change what the command does (``git branch -D``,
``sed -i``). Each program's entry was checked against its manual (GNU coreutils, grep, sed, findutils and
tar; ripgrep 14, git 2.4x, kubectl 1.3x, man-db, less, pytest 8): what is not listed is not inert, and an
allow rule matches a command with it only where the rule's own prefix names it (``sed -i``).

The spelling, one option per word:

- ``-l`` a flag; ``-n=`` an option with a value (``-n 5``, ``-n5``, ``--lines=5``, ``--lines 5``);
  ``--color[=]`` an optional value, only ever attached (``--color``, ``--color=never``); ``--arg==`` two values
  (jq's ``--arg NAME VALUE``).
- ``!`` before an option: known, so its value is read as its value, but not inert (``!-C=`` for git).

A program's other properties (``Program``): whether short options cluster (``-la``), whether ``-5`` is a
count, what its operands are (``any``; ``none``, where an operand changes what it does, as ``git branch
NAME`` makes a branch; ``sed``/``awk``, whose first operand is a script nami reads for itself), its
sub-commands, and ``runs_nothing``: no option or operand of it can make it run a program, so words computed
when the line runs (``ls $dir``, ``cat *.py``) cannot either. A deny rule relies on that last one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Operands = Literal["any", "none", "sed", "awk"]


@dataclass(frozen=True)
class Option:
    values: int  # words it takes: 0, 1 or 2; -1 an optional value, attached only
    inert: bool


@dataclass(frozen=True)
class Program:
    options: dict[str, Option]
    cluster: bool = True  # -la is -l -a (getopt); False: every option is one word (find, test)
    numeric: bool = False  # -5 is a count (head -5, git log -3)
    operands: Operands = "any"
    options_end_at_operand: bool = False  # echo, printf: the first operand ends the options
    plus_operands: bool = False  # +WORD is an operand (date +%F); elsewhere it is read as an option
    double_dash: bool = True  # `--` ends the options
    runs_nothing: bool = False
    subcommands: dict[str, Program] = field(default_factory=dict)
    code_options: frozenset[str] = frozenset()  # options whose value is the script (sed -e)
    code_files: frozenset[str] = frozenset()  # options that take the script from a file (sed -f): no operand script


def options(spec: str) -> dict[str, Option]:
    table: dict[str, Option] = {}
    for token in spec.split():
        inert = not token.startswith("!")
        name = token.lstrip("!")
        if name.endswith("[=]"):
            table[name[:-3]] = Option(-1, inert)
        elif name.endswith("=="):
            table[name[:-2]] = Option(2, inert)
        elif name.endswith("=") and len(name) > 1:
            table[name[:-1]] = Option(1, inert)
        else:
            table[name] = Option(0, inert)
    return table


def program(spec: str, *more: str, **properties: object) -> Program:
    merged: dict[str, Option] = {}
    for part in (spec, *more):
        merged.update(options(part))
    return Program(merged, **properties)  # type: ignore[arg-type]


HELP = "--help --version"

# -- coreutils and friends: none of their options runs a program -----------------------------------------

LS = program("-a -A -b -B -c -C -d -D -f -F -g -G -h -H -i -k -l -L -m -n -N -o -p -q -Q -r -R -s -S -t -u -U -v "
             "-x -X -Z -1 -I= -T= -w= --all --almost-all --author --escape --block-size= --ignore-backups "
             "--color[=] --colour[=] --directory --dired --classify[=] --file-type --format= --full-time "
             "--group-directories-first --no-group --human-readable --si --dereference-command-line "
             "--dereference-command-line-symlink-to-dir --hide= --hyperlink[=] --indicator-style= --inode "
             "--ignore= --kibibytes --dereference --numeric-uid-gid --literal --hide-control-chars "
             "--show-control-chars --quote-name --quoting-style= --reverse --recursive --size --sort= --time= "
             "--time-style= --tabsize= --width= --context --zero", HELP, runs_nothing=True)
CAT = program("-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --show-ends --number --squeeze-blank "
              "--show-tabs --show-nonprinting", HELP, runs_nothing=True)
HEAD = program("-c= -n= -q -v -z --bytes= --lines= --quiet --silent --verbose --zero-terminated", HELP,
               numeric=True, runs_nothing=True)
TAIL = program("-c= -n= -f -F -q -v -z -s= --bytes= --lines= --follow[=] --retry --pid= --quiet --silent "
               "--sleep-interval= --max-unchanged-stats= --verbose --zero-terminated", HELP,
               numeric=True, runs_nothing=True)
WC = program("-c -m -l -L -w --bytes --chars --lines --max-line-length --words --files0-from= --total=", HELP,
             runs_nothing=True)
GREP = program("-E -F -G -P -e= -f= -i -y -v -w -x -c -l -L -o -q -s -b -H -h -n -T -u -Z -z -a -I -r -R -U -A= "
               "-B= -C= -m= -d= -D= --extended-regexp --fixed-strings --basic-regexp --perl-regexp --regexp= "
               "--file= --ignore-case --no-ignore-case --invert-match --word-regexp --line-regexp --count "
               "--color[=] --colour[=] --files-without-match --files-with-matches --only-matching --quiet "
               "--silent --no-messages --byte-offset --with-filename --no-filename --label= --line-number "
               "--initial-tab --null --null-data --text --binary-files= --devices= --directories= --exclude= "
               "--exclude-from= --exclude-dir= --include= --recursive --dereference-recursive --line-buffered "
               "--binary --after-context= --before-context= --context= --max-count=", HELP,
               numeric=True, runs_nothing=True)
CUT = program("-b= -c= -d= -f= -n -s -z --bytes= --characters= --delimiter= --fields= --complement "
              "--only-delimited --output-delimiter= --zero-terminated", HELP, runs_nothing=True)
TR = program("-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1", HELP, runs_nothing=True)
DU = program("-a -b -c -h -H -k -L -l -m -P -s -S -x -0 -d= -B= -t= -X= --all --apparent-size --bytes --total "
             "--human-readable --si --max-depth= --summarize --separate-dirs --one-file-system --dereference "
             "--dereference-args --no-dereference --count-links --block-size= --threshold= --time[=] "
             "--time-style= --exclude= --exclude-from= --files0-from= --inodes --null", HELP, runs_nothing=True)
STAT = program("-L -f -t -c= --format= --printf= --terse --dereference --file-system --cached=", HELP,
               runs_nothing=True)
BASENAME = program("-a -z -s= --multiple --suffix= --zero", HELP, runs_nothing=True)
DIRNAME = program("-z --zero", HELP, runs_nothing=True)
REALPATH = program("-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing --logical --physical "
                   "--quiet --strip --no-symlinks --zero --relative-to= --relative-base=", HELP, runs_nothing=True)
READLINK = program("-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing --canonicalize-missing "
                   "--no-newline --quiet --silent --verbose --zero", HELP, runs_nothing=True)
DATE = program("-d= -f= -I[=] -r= -R -u --date= --file= --iso-8601[=] --rfc-3339= --rfc-email --reference= "
               "--utc --universal --debug", HELP, plus_operands=True, runs_nothing=True)
# sort is not runs_nothing: --compress-program runs one, -o writes.
SORT = program("-b -d -f -g -i -M -h -n -R -r -V -c -C -m -s -u -z -k= -t= -S= --ignore-leading-blanks "
               "--dictionary-order --ignore-case --general-numeric-sort --ignore-nonprinting --month-sort "
               "--human-numeric-sort --numeric-sort --random-sort --reverse --version-sort --sort= --check[=] "
               "--merge --stable --unique --zero-terminated --key= --field-separator= --buffer-size= "
               "--parallel= --debug --files0-from= --random-source=",
               "!-o= !--output= !-T= !--temporary-directory= !--compress-program=", HELP)
JQ = program("-r -j -a -c -n -e -s -S -C -M -R --raw-output --join-output --ascii-output --compact-output "
             "--null-input --exit-status --slurp --sort-keys --color-output --monochrome-output --raw-input --tab "
             "--indent= --stream --stream-errors --seq --raw-output0 --arg== --argjson== --slurpfile== "
             "--rawfile== --args --jsonargs -f= --from-file= -L=", HELP, runs_nothing=True)  # jq cannot run programs
# Shell builtins. test and printf are not runs_nothing: `test $x` may be `test -v 'a[$(…)]'`.
ECHO = program("-n -e -E", options_end_at_operand=True, double_dash=False, runs_nothing=True)
PRINTF = program("", "!-v=", options_end_at_operand=True)
TEST = program("-a -b -c -d -e -f -g -h -k -p -r -s -t -u -w -x -G -L -N -O -S -z -n -o -eq -ne -lt -le -gt -ge "
               "-nt -ot -ef", "!-v !-R", cluster=False, double_dash=False)
PWD = program("-L -P", runs_nothing=True)
CD = program("-L -P -e -@", runs_nothing=True)
TRUE = program("", runs_nothing=True, double_dash=False)

# -- search, text and archives ------------------------------------------------------------------------------

RG = program("-e= -f= -g= -t= -T= -A= -B= -C= -m= -d= -j= -M= -E= -r= -i -s -S -w -x -v -c -l -n -N -o -p -q -u "
             "-a -b -H -I -L -F -P -U -0 --regexp= --file= --glob= --iglob= --type= --type-not= --type-add= "
             "--type-clear= --after-context= --before-context= --context= --max-count= --max-depth= --threads= "
             "--max-columns= --encoding= --replace= --ignore-case --case-sensitive --smart-case --word-regexp "
             "--line-regexp --invert-match --count --count-matches --files-with-matches --files-without-match "
             "--line-number --no-line-number --only-matching --pretty --quiet --unrestricted --text "
             "--byte-offset --with-filename --no-filename --no-ignore --no-ignore-vcs --no-ignore-parent "
             "--no-ignore-dot --no-ignore-global --no-ignore-exclude --no-ignore-files --ignore-file= --hidden "
             "--no-hidden --follow --fixed-strings --pcre2 --engine= --multiline --multiline-dotall --files "
             "--type-list --json --no-json --heading --no-heading --column --no-column --color= --colors= "
             "--sort= --sortr= --trim --vimgrep --stats --null --null-data --max-filesize= "
             "--max-columns-preview --passthru --crlf --binary --no-messages --one-file-system "
             "--glob-case-insensitive --line-buffered --block-buffered --no-config --path-separator= "
             "--field-match-separator= --field-context-separator= --context-separator= "
             "--no-context-separator --include-zero --mmap --no-mmap --no-unicode --no-pcre2-unicode "
             "--auto-hybrid-regex --dfa-size-limit= --regex-size-limit=",
             "!--pre= !--pre-glob= !-z !--search-zip", HELP, numeric=True)
SED = program("-n -E -r -s -u -z --quiet --silent --regexp-extended --separate --unbuffered --null-data --posix "
              "--debug --sandbox -l= --line-length= -e= --expression=",
              "!-i[=] !--in-place[=] !-f= !--file= !--follow-symlinks", HELP,
              operands="sed", code_options=frozenset({"-e", "--expression"}), code_files=frozenset({"-f", "--file"}))
AWK = program("-F= -v= --field-separator= --assign= --posix --characters-as-bytes -b --re-interval --lint[=] "
              "--sandbox -S",
              "!-f= !--file= !-e= !--source= !-E= !--exec= !-i= !--include= !-l= !--load= !-W=", HELP,
              operands="awk", code_files=frozenset({"-f", "--file", "-e", "--source", "-E", "--exec"}))
# find's expression is its "options", one word each: tests and actions that only print are inert.
FIND = program("-H -L -P -O0 -O1 -O2 -O3 -D= -name= -iname= -path= -ipath= -wholename= -iwholename= -regex= "
               "-iregex= -regextype= -type= -xtype= -size= -empty -newer= -anewer= -cnewer= -newermt= -newerct= "
               "-newerat= -newermm= -newercm= -newerBt= -mtime= -mmin= -atime= -amin= -ctime= -cmin= -used= -user= "
               "-group= -uid= -gid= -nouser -nogroup -perm= -links= -inum= -samefile= -readable -writable "
               "-executable -lname= -ilname= -fstype= -maxdepth= -mindepth= -depth -d -mount -xdev -noleaf "
               "-ignore_readdir_race -noignore_readdir_race -daystart -follow -print -print0 -printf= -ls -prune "
               "-quit -true -false -not -a -and -o -or -help -version -files0-from= --help --version",
               "!-exec !-execdir !-ok !-okdir !-delete !-fprint= !-fprint0= !-fprintf== !-fls=",
               cluster=False, double_dash=False)
# tar lists archives; creating and extracting write files. An archive name with a colon is on another host,
# which tar reaches by running rsh (see plain.py).
TAR = program("-t --list -v --verbose -z --gzip --gunzip --ungzip -j --bzip2 -J --xz --lzip --lzma --zstd -f= "
              "--file= -O --to-stdout --wildcards --no-wildcards --anchored --no-anchored --exclude= "
              "--exclude-from= -X= -T= --files-from= --numeric-owner --null --strip-components= "
              "--show-transformed-names --utc --full-time --quoting-style= --totals[=] -b= --blocking-factor= "
              "-a --auto-compress --occurrence[=] -R --block-number --ignore-case --no-ignore-case "
              "--force-local --warning= -C= --directory=",
              "!-x !--extract !--get !-c !--create !-r !--append !-u !--update !-A !--catenate !--concatenate "
              "!--delete !-I= !--use-compress-program= !--to-command= !--checkpoint-action= !-F= !--info-script= "
              "!--new-volume-script= !--rsh-command= !--rmt-command= !-M !--multi-volume", HELP)
MAN = program("-a --all -k --apropos -f --whatis -w --where --path -W --where-cat -s= --sections= -S= -L= "
              "--locale= -e= --extension= -i --ignore-case -I --match-case --regex --wildcard --names-only -7 "
              "--ascii -E= --encoding= --no-hyphenation --no-justification",
              "!-P= !--pager= !-H[=] !--html[=] !-X[=] !--gxditview[=] !-p= !--preprocessor= !-T[=] "
              "!--troff-device[=] !-Z !--ditroff !-R= !--recode= !-C= !--config-file= !-M= !--manpath= "
              "!-l !--local-file", HELP)
LESS = program("-N -S -R -r -i -I -F -X -n -s -M -m -E -e -q -Q -f -g -G -J -K -w -W -c -d -~ -x= -z= -b= -h= -y= "
               "-j= --LINE-NUMBERS --chop-long-lines --RAW-CONTROL-CHARS --ignore-case --IGNORE-CASE "
               "--quit-if-one-screen --no-init --quiet --silent --squeeze-blank-lines",
               "!-k= !--lesskey-file= !--lesskey-src= !--lesskey-content= !-o= !-O= !--log-file= !--LOG-FILE= "
               "!-p= !--pattern= !-t= !--tag= !-T= !--tag-file=", HELP)
PYTEST = program("-q --quiet -v --verbose -x --exitfirst -s -l --showlocals -r= -k= -m= -p= --co --collect-only "
                 "--lf --last-failed --ff --failed-first --nf --new-first --sw --stepwise --sw-skip "
                 "--stepwise-skip --maxfail= --tb= --durations= --durations-min= --no-header --no-summary -W= "
                 "--pythonwarnings= --strict-markers --strict-config --deselect= --ignore= --ignore-glob= "
                 "--import-mode= --capture= --color= --code-highlight= --runxfail --disable-warnings "
                 "--disable-pytest-warnings --doctest-modules --doctest-glob= --setup-show --setup-only "
                 "--setup-plan --fixtures --fixtures-per-test --markers -V -h --full-trace --show-capture= "
                 "--no-showlocals --continue-on-collection-errors --keep-duplicates --noconftest --cache-show[=] "
                 "--cache-clear -n= --numprocesses= --dist= --timeout= --log-level= --log-cli-level=",
                 # -p loads a plugin: an importable module, as pytest imports the repository's own code anyway.
                 "!-c= !--config-file= !--confcutdir= !--pdb !--pdbcls= !--trace !--basetemp= !--junitxml= "
                 "!--junit-xml= !--log-file= !--debug[=] !-o= !--override-ini= !--rootdir= !--pastebin= "
                 "!--cov[=] !--cov-report=", HELP)

# -- git ----------------------------------------------------------------------------------------------------

_GIT_DIFF = ("-p -u -s --patch --no-patch --stat[=] --numstat --shortstat --dirstat[=] --summary --name-only "
             "--name-status --raw --patch-with-stat --patch-with-raw -z --full-index --binary --abbrev[=] "
             "--histogram --patience --minimal --diff-algorithm= --src-prefix= --dst-prefix= --no-prefix "
             "--relative[=] --no-relative -R --text -a --exit-code --quiet --check --submodule[=] "
             "--ignore-submodules[=] --color[=] --no-color --color-moved[=] --word-diff[=] --word-diff-regex= "
             "--color-words[=] --ignore-all-space -w -b --ignore-space-change --ignore-blank-lines "
             "--ignore-space-at-eol --ignore-cr-at-eol -U= --unified= --inter-hunk-context= -W --function-context "
             "--no-ext-diff --no-textconv -M[=] --find-renames[=] -C[=] --find-copies[=] --find-copies-harder "
             "--no-renames -B[=] --break-rewrites[=] -D --irreversible-delete -l= --diff-filter= -S= -G= "
             "--pickaxe-all --pickaxe-regex -O= --rotate-to= --skip-to= --cc --combined-all-paths -m --dd "
             "--output-indicator-new= --output-indicator-old= --output-indicator-context= --compact-summary "
             "--ita-invisible-in-index --line-prefix= --default-prefix")
_GIT_LOG = ("--oneline --graph --decorate[=] --no-decorate --decorate-refs= --decorate-refs-exclude= --all "
            "--branches[=] --tags[=] --remotes[=] --glob= --exclude= -n= --max-count= --skip= --since= --after= "
            "--until= --before= --author= --committer= --grep= --all-match --invert-grep -i "
            "--regexp-ignore-case -E -F -P --extended-regexp --fixed-strings --perl-regexp --basic-regexp "
            "--merges --no-merges --min-parents= --max-parents= --first-parent --reverse --format= --pretty[=] "
            "--abbrev-commit --no-abbrev-commit --date= --relative-date --follow -L= --full-diff --topo-order "
            "--date-order --author-date-order --left-right --cherry-pick --cherry-mark --cherry --boundary "
            "--ancestry-path[=] --simplify-by-decoration --full-history --dense --sparse --simplify-merges "
            "--mailmap --no-mailmap --use-mailmap --encoding= --notes[=] --no-notes --show-notes[=] "
            "--expand-tabs[=] --no-expand-tabs --log-size --parents --children --walk-reflogs -g --no-walk[=] "
            "--do-walk --source --count --objects --not")
_GIT_GLOBAL = ("--no-pager -P --no-optional-locks --literal-pathspecs --glob-pathspecs --noglob-pathspecs "
               "--icase-pathspecs --no-replace-objects --no-advice",
               "!-C= !-c= !--git-dir= !--work-tree= !--namespace= !--config-env= !--super-prefix= !--exec-path[=] "
               "!-p !--paginate !--bare", HELP)
_GIT_SUBCOMMANDS = {
    "status": program("-s --short -b --branch --show-stash --porcelain[=] --long -v --verbose -u[=] "
                      "--untracked-files[=] --ignore-submodules[=] --ignored[=] -z --column[=] --no-column "
                      "--ahead-behind --no-ahead-behind --renames --no-renames --find-renames[=]"),
    "log": program(_GIT_LOG, _GIT_DIFF, "!--output=", numeric=True),
    "show": program(_GIT_LOG, _GIT_DIFF, "!--output=", numeric=True),
    "rev-list": program(_GIT_LOG, numeric=True),
    "shortlog": program("-n -s -e -c --numbered --summary --email --committer --format= --group= -w[=] --all "
                        "--no-merges --merges --since= --until= --author= --first-parent", numeric=True),
    "diff": program(_GIT_DIFF, "--cached --staged --merge-base --no-index", "!--output= !--ext-diff !--textconv"),
    "branch": program("-a --all -r --remotes -v --verbose --list --contains= --no-contains= --merged[=] "
                      "--no-merged[=] --points-at= --sort= --format= --color[=] --no-color --column[=] "
                      "--no-column --abbrev= --no-abbrev --show-current -i --ignore-case",
                      "!-d !-D !-m !-M !-c !-C !--delete !--move !--copy !-f !--force !-u= !--set-upstream-to= "
                      "!--unset-upstream !-t !--track[=] !--edit-description", operands="none"),
    "tag": program("-l --list -n[=] --sort= --contains= --no-contains= --merged[=] --no-merged[=] --points-at= "
                   "--format= --color[=] --column[=] --no-column -i --ignore-case", operands="none"),
    "rev-parse": program("--abbrev-ref[=] --short[=] --verify -q --quiet --symbolic --symbolic-full-name "
                         "--show-toplevel --show-prefix --show-cdup --git-dir --git-common-dir --absolute-git-dir "
                         "--is-inside-work-tree --is-inside-git-dir --is-bare-repository "
                         "--show-superproject-working-tree --all --branches[=] --tags[=] --remotes[=] --default= "
                         "--sq --local-env-vars --path-format= --since= --until= --show-object-format[=]"),
    "ls-files": program("-c -d -m -o -i -s -u -k -t -v -f -z --cached --deleted --modified --others --ignored "
                        "--stage --unmerged --killed --directory --no-empty-directory --eol --exclude= -x= "
                        "--exclude-from= -X= --exclude-per-directory= --exclude-standard --error-unmatch "
                        "--full-name --recurse-submodules --abbrev[=] --debug --deduplicate --format= --with-tree= "
                        "--sparse"),
    "ls-tree": program("-d -r -t -l --long -z --name-only --name-status --object-only --full-name --full-tree "
                       "--abbrev[=] --format="),
    "blame": program("-L= -l -t -p --porcelain --line-porcelain --incremental -e --show-email -w -M[=] -C[=] -s -n "
                     "--show-name --show-number -f --root --show-stats --date= --abbrev= -c --color-lines "
                     "--color-by-age --ignore-rev= --ignore-revs-file= --progress --no-progress --first-parent "
                     "--encoding="),
    "describe": program("--all --tags --contains --abbrev= --candidates= --exact-match --debug --long --match= "
                        "--exclude= --always --first-parent --dirty[=] --broken[=]"),
    "grep": program("-a --text -i --ignore-case -I --max-depth= -r --recursive --no-recursive -w --word-regexp -v "
                    "--invert-match -h -H --full-name -E -G -F -P --extended-regexp --basic-regexp "
                    "--fixed-strings --perl-regexp -n --line-number --column -l --files-with-matches --name-only "
                    "-L --files-without-match -z --null -o --only-matching -c --count --color[=] --no-color "
                    "--break --heading -p --show-function -A= -B= -C= --after-context= --before-context= "
                    "--context= -W --function-context --threads= -f= -e= --and --or --not --all-match -q --quiet "
                    "--cached --untracked --no-index --exclude-standard --recurse-submodules --max-count= -m=",
                    "!-O[=] !--open-files-in-pager[=] !--textconv", numeric=True),
    "cat-file": program("-t -s -e -p --batch[=] --batch-check[=] --batch-all-objects --follow-symlinks "
                        "--unordered --buffer -Z --use-mailmap --allow-unknown-type", "!--textconv !--filters"),
    "merge-base": program("-a --all --octopus --independent --is-ancestor --fork-point"),
    "remote": program("-v --verbose", operands="none", subcommands={
        "show": program("-n"), "get-url": program("--push --all")}),
    "add": program("-A --all -u --update -n --dry-run -v --verbose -f --force -N --intent-to-add --no-all "
                   "--ignore-removal --no-ignore-removal --refresh --ignore-errors --ignore-missing --renormalize "
                   "--chmod= --sparse --pathspec-from-file= --pathspec-file-nul",
                   "!-p !--patch !-i !--interactive !-e !--edit"),
    "commit": program("-m= --message= -a --all -q --quiet -v --verbose --amend --no-edit -s --signoff "
                      "--no-signoff --allow-empty --allow-empty-message --author= --date= --fixup= --squash= -F= "
                      "--file= -n --no-verify --cleanup= --only -o -i --include --dry-run --short --branch "
                      "--porcelain --long -z --null --status --no-status -u[=] --untracked-files[=] "
                      "--reset-author --trailer= --pathspec-from-file= --pathspec-file-nul --no-gpg-sign -C= "
                      "--reuse-message=",
                      "!-e !--edit !-c= !--reedit-message= !-S[=] !--gpg-sign[=] !-t= !--template= !-p !--patch "
                      "!--interactive"),
}
GIT = program(*_GIT_GLOBAL, subcommands=_GIT_SUBCOMMANDS)

# -- kubectl: its global options go anywhere; --kubeconfig, --server, --token… are not inert -----------------

_KUBECTL_GLOBAL = ("-n= --namespace= --context= -A --all-namespaces --request-timeout= -h",
                   "!--kubeconfig= !-s= !--server= !--token= !--as= !--as-group= !--as-uid= !--user= !--cluster= "
                   "!--cache-dir= !--certificate-authority= !--client-certificate= !--client-key= "
                   "!--insecure-skip-tls-verify[=] !--tls-server-name= !-v= !--v= !--vmodule= !--log-file= "
                   "!--profile= !--profile-output= !--username= !--password= !--match-server-version[=]", HELP)


def _kubectl(*specs: str, **properties: object) -> Program:
    return program(*_KUBECTL_GLOBAL, *specs, **properties)


_KUBECTL_SUBCOMMANDS = {
    "get": _kubectl("-o= --output= -l= --selector= --field-selector= -w --watch --watch-only "
                    "--output-watch-events --show-labels -L= --label-columns= --sort-by= --no-headers --show-kind "
                    "--chunk-size= --ignore-not-found --raw= -f= --filename= -R --recursive --subresource= "
                    "--server-print --show-managed-fields --template= --allow-missing-template-keys[=]"),
    "describe": _kubectl("-l= --selector= --show-events[=] -f= --filename= -R --recursive --chunk-size="),
    "logs": _kubectl("-c= --container= -f --follow --tail= --since= --since-time= -p --previous --timestamps "
                     "--all-containers[=] --prefix --limit-bytes= --max-log-requests= --pod-running-timeout= "
                     "--ignore-errors -l= --selector="),
    "top": _kubectl("", operands="none", subcommands=dict.fromkeys(
        ("pod", "pods", "po", "node", "nodes", "no"),
        _kubectl("--containers -l= --selector= --sort-by= --no-headers --use-protocol-buffers --sum "
                 "--field-selector="))),
    "explain": _kubectl("--recursive --api-version= -o= --output="),
    "version": _kubectl("--client -o= --output=", operands="none"),
    "api-resources": _kubectl("--namespaced[=] --verbs= -o= --output= --api-group= --sort-by= --no-headers --cached "
                              "--categories=", operands="none"),
    "api-versions": _kubectl("", operands="none"),
    "cluster-info": _kubectl("", operands="none"),
    "events": _kubectl("--for= --types= -w --watch -o= --output= --no-headers --chunk-size="),
    "config": _kubectl("", operands="none", subcommands={
        "view": _kubectl("--minify --flatten -o= --output=", "!--raw", operands="none"),
        "get-contexts": _kubectl("-o= --output= --no-headers"),
        "current-context": _kubectl("", operands="none")}),
    "auth": _kubectl("", operands="none", subcommands={
        "can-i": _kubectl("--list --no-headers -q --quiet --subresource=")}),
}
KUBECTL = program(*_KUBECTL_GLOBAL, subcommands=_KUBECTL_SUBCOMMANDS)

TABLE: dict[str, Program] = {
    "ls": LS, "cat": CAT, "head": HEAD, "tail": TAIL, "wc": WC, "grep": GREP, "egrep": GREP, "fgrep": GREP,
    "cut": CUT, "tr": TR, "du": DU, "stat": STAT, "basename": BASENAME, "dirname": DIRNAME, "realpath": REALPATH,
    "readlink": READLINK, "date": DATE, "sort": SORT, "jq": JQ, "echo": ECHO, "printf": PRINTF, "test": TEST,
    "pwd": PWD, "cd": CD, "true": TRUE, "false": TRUE, "rg": RG, "sed": SED, "awk": AWK, "mawk": AWK, "gawk": AWK,
    "nawk": AWK, "find": FIND, "tar": TAR, "man": MAN, "less": LESS, "pytest": PYTEST, "py.test": PYTEST,
    "git": GIT, "kubectl": KUBECTL,
}
# `python -m MODULE …`: the module's table, after these options of python's own.
PYTHON_OPTIONS = options("-B -u -I -E -s -S -O -OO -q -b -bb -P")
PYTHON_MODULES: dict[str, Program] = {"pytest": PYTEST}
