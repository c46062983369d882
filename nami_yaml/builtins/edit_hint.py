"""What edit_file says when old_text is not in the file: where the text differs only in whitespace, or
the most similar lines, found within a fixed amount of work however large the file and old_text are.

Comparing old_text with every window of the file character by character is quadratic per window (a
60-line old_text against a 2,000-line file took 90 s). So each window first gets a cheap upper bound of
its similarity (the overlap of character counts, updated line by line as the window slides), windows are
compared for real best-bound first, and the search stops when no remaining bound can beat the best match
or the work budget is spent. A long old_text is compared line by line instead of character by character.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Sequence

NUMBERED = re.compile(r"^\s*\d+\t")
MAX_FILE_LINES = 20_000  # past this no similar text is searched for; the plain message still helps
LINE_CHARS = 300  # a longer line is compared by its start
CHAR_TEXT = 2_000  # an old_text up to this many characters is compared character by character
WORK_BUDGET = 12_000_000  # element pairs SequenceMatcher may face, over all windows compared
WHITESPACE_BUDGET = 2_000_000  # line comparisons for the whitespace-only search
MIN_RATIO = 0.5


def not_found_message(text: str, old: str, shown: str) -> str:
    """An error that tells the model what is actually in the file near what it asked for."""
    msg = f"old_text was not found in {shown}."
    old_lines = old.strip("\n").split("\n")
    if all(NUMBERED.match(line) for line in old_lines if line.strip()):
        msg += (" It seems to include the line-number prefixes that read_file adds; "
                "send the file text only, without the number and tab.")
    file_lines = text.split("\n")
    spot = whitespace_match(file_lines, old_lines)
    if spot is not None:
        verb = "matches" if len(old_lines) == 1 else "match"
        return (f"{msg} {_span(spot, len(old_lines))} {verb} it when whitespace is ignored, so the difference is "
                "only in indentation, tabs or trailing spaces. The exact text there is:\n"
                f"{_numbered(file_lines, spot, len(old_lines))}")
    best = nearest(file_lines, old_lines)
    if best is None:
        return msg + " Nothing similar was found; read the file again with read_file and copy the text exactly."
    start, ratio = best
    return (f"{msg} The most similar text ({ratio:.0%} similar) is at {_span(start, len(old_lines)).lower()}:\n"
            f"{_numbered(file_lines, start, len(old_lines))}\n"
            "Copy the text exactly (read_file shows it), then retry.")


def _span(start: int, count: int) -> str:
    return f"Line {start + 1}" if count == 1 else f"Lines {start + 1}-{start + count}"


def _numbered(lines: list[str], start: int, count: int) -> str:
    shown = lines[start:start + min(count, 40)]
    return "\n".join(f"{start + n + 1:>6}\t{line}" for n, line in enumerate(shown))


def whitespace_match(file_lines: list[str], old_lines: list[str]) -> int | None:
    """Where old_text matches when runs of whitespace are ignored (its first and last lines may be the
    end and the start of a file line), within WHITESPACE_BUDGET line comparisons."""
    norm_old = [" ".join(line.split()) for line in old_lines]
    k = len(norm_old)
    if not any(norm_old):
        return None
    norm_file = [" ".join(line.split()) for line in file_lines]
    if k == 1:
        return next((i for i, line in enumerate(norm_file) if norm_old[0] in line), None)
    budget = WHITESPACE_BUDGET
    for i in range(len(norm_file) - k + 1):
        if not norm_file[i].endswith(norm_old[0]):
            continue
        j = 1
        while j < k - 1 and norm_file[i + j] == norm_old[j]:
            j += 1
        budget -= j
        if j == k - 1 and norm_file[i + k - 1].startswith(norm_old[-1]):
            return i
        if budget <= 0:
            return None
    return None


def _upper_bounds(units: Sequence[Counter[str]], k: int, target: Counter[str], joins: int) -> list[float]:
    """For each window of ``k`` units, ``2M / (|window| + |target|)`` with M the overlap of their element
    counts: SequenceMatcher.quick_ratio, which bounds ratio from above, updated as the window slides."""
    window: Counter[str] = Counter()
    matched = size = 0
    target_size = sum(target.values()) + joins

    def move(unit: Counter[str], sign: int) -> None:
        nonlocal matched, size
        for element, count in unit.items():
            wanted = target.get(element, 0)
            before = min(window[element], wanted)
            window[element] += sign * count
            matched += min(window[element], wanted) - before
            size += sign * count

    for unit in units[:k]:
        move(unit, 1)
    bounds = []
    for start in range(max(1, len(units) - k + 1)):
        if start:
            move(units[start - 1], -1)
            move(units[start + k - 1], 1)
        bounds.append(2 * (matched + joins) / ((size + joins + target_size) or 1))
    return bounds


def nearest(file_lines: list[str], old_lines: list[str]) -> tuple[int, float] | None:
    """The start of the window of the file most similar to old_lines, and the similarity (0.5 to 1)."""
    if not old_lines or not file_lines or len(file_lines) > MAX_FILE_LINES:
        return None
    k = len(old_lines)
    lines = [line[:LINE_CHARS] for line in file_lines]
    old = [line[:LINE_CHARS] for line in old_lines]
    by_chars = sum(map(len, old)) + k <= CHAR_TEXT
    joins = min(k, len(lines)) - 1 if by_chars else 0  # the newlines between lines, in both texts alike
    units = [Counter(line) if by_chars else Counter({line: 1}) for line in lines]
    target_units: Counter[str] = Counter()
    for line in old:
        target_units.update(Counter(line) if by_chars else {line: 1})
    bounds = _upper_bounds(units, k, target_units, joins)

    def sequence(part: list[str]) -> str | list[str]:
        return "\n".join(part) if by_chars else part

    target = sequence(old)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    best: tuple[int, float] | None = None
    floor, spent = MIN_RATIO, 0
    for start in sorted(range(len(bounds)), key=bounds.__getitem__, reverse=True):
        if bounds[start] <= floor:
            break  # no window left can beat what was found
        window = sequence(lines[start:start + k])
        spent += len(window) * len(target)
        if spent > WORK_BUDGET:
            break
        matcher.set_seq1(window)
        ratio = matcher.ratio()
        if ratio > floor:
            best, floor = (start, ratio), ratio
    return best
