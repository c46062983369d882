from __future__ import annotations

import stat
import tracemalloc
from pathlib import Path

from nami_yaml.runners.output import (
    OutputCapture,
    SaveBudget,
    cut_note,
    omission_marker,
    open_spill_file,
    truncate_text,
)


def _feed_all(capture: OutputCapture, data: bytes, chunk: int) -> None:
    for start in range(0, len(data), chunk):
        capture.feed(data[start : start + chunk])
    capture.close()


def test_marker_format() -> None:
    assert omission_marker(1234567, Path("/x/y.txt")) == "\n... [1,234,567 bytes omitted; full output: /x/y.txt] ...\n"
    assert omission_marker(5, None, unit="characters") == "\n... [5 characters omitted] ...\n"


def test_output_that_fits_is_kept_whole_and_nothing_is_spilled(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    capture = OutputCapture(100, spill)
    _feed_all(capture, b"x" * 60 + b"y" * 40, chunk=7)
    assert capture.text() == "x" * 60 + "y" * 40
    assert capture.total == 100
    assert not capture.truncated
    assert capture.spill_path is None
    assert not spill.exists()


def test_overflow_keeps_head_and_tail_and_spills_everything(tmp_path: Path) -> None:
    data = b"".join(b"line %06d\n" % i for i in range(20_000))
    capture = OutputCapture(1000, tmp_path / "spill", label="stdout")
    _feed_all(capture, data, chunk=333)
    assert capture.truncated
    assert capture.total == len(data)
    assert capture.spill_path is not None
    assert capture.spill_path.read_bytes() == data
    # 500-byte halves, each trimmed to whole 12-byte lines: the marker sits on a line of its own.
    marker = omission_marker(len(data) - 2 * 492, capture.spill_path).lstrip("\n")
    assert capture.text() == data[:492].decode() + marker + data[-492:].decode()
    assert "stdout" in capture.spill_path.name


def test_single_chunk_bigger_than_the_limit(tmp_path: Path) -> None:
    data = bytes(range(97, 123)) * 1000
    capture = OutputCapture(10, tmp_path)
    capture.feed(data)
    capture.close()
    # One line longer than the budget: cut inside, the marker inside the line.
    marker = omission_marker(len(data) - 10, capture.spill_path).strip("\n")
    assert capture.text() == f"abcde {marker} vwxyz"
    assert capture.spill_path is not None and capture.spill_path.read_bytes() == data


def test_exactly_at_the_limit_is_not_truncated(tmp_path: Path) -> None:
    capture = OutputCapture(10, tmp_path)
    _feed_all(capture, b"0123456789", chunk=3)
    assert not capture.truncated and capture.text() == "0123456789"
    capture.feed(b"!")
    assert capture.truncated
    assert capture.text() == "01234 " + omission_marker(1, capture.spill_path).strip("\n") + " 6789!"


def test_memory_stays_bounded_for_a_large_stream() -> None:
    big, small = b"z" * 65536, b"z" * 1000  # both the replace and the append-then-trim paths
    capture = OutputCapture(2000, None)
    tracemalloc.start()
    try:
        for _ in range(100):
            capture.feed(big)
            for _ in range(100):
                capture.feed(small)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert capture.total == 100 * (65536 + 100 * 1000)
    assert peak < 2_000_000
    assert capture.text().endswith("z" * 1000)


def test_no_spill_dir_still_truncates_with_plain_marker() -> None:
    capture = OutputCapture(4, None)
    _feed_all(capture, b"abcdefgh", chunk=1)
    assert capture.spill_path is None
    assert capture.text() == "ab ... [4 bytes omitted] ... gh"


def test_unusable_spill_dir_degrades_to_no_spill(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    capture = OutputCapture(4, blocker / "sub")
    _feed_all(capture, b"abcdefgh", chunk=3)
    assert capture.truncated
    assert capture.spill_path is None
    assert "[4 bytes omitted]" in capture.text()


def test_utf8_sequences_cut_at_the_boundaries_are_dropped_cleanly(tmp_path: Path) -> None:
    data = "€".encode() * 1000  # 3 bytes each, so 500-byte head and tail both split a character
    capture = OutputCapture(1000, tmp_path)
    _feed_all(capture, data, chunk=1000)
    text = capture.text()
    assert "\ufffd" not in text
    head, _, rest = text.partition(" ... [")
    tail = rest.split("] ... ", 1)[1]
    assert head == "€" * 166
    assert tail == "€" * 166
    assert f"[{len(data) - 2 * 166 * 3:,} bytes omitted" in text


def test_invalid_bytes_are_replaced(tmp_path: Path) -> None:
    capture = OutputCapture(100, tmp_path)
    _feed_all(capture, b"ok \xff\xfe end", chunk=4)
    assert capture.text() == "ok \ufffd\ufffd end"
    garbage = OutputCapture(6, tmp_path)
    _feed_all(garbage, b"\x80" * 50 + b"\xf0\x9f", chunk=5)
    assert "bytes omitted" in garbage.text()  # does not raise on lone continuation/lead bytes


def test_zero_limit_omits_everything(tmp_path: Path) -> None:
    capture = OutputCapture(0, tmp_path)
    _feed_all(capture, b"abc", chunk=1)
    assert capture.text() == omission_marker(3, capture.spill_path)
    assert capture.spill_path is not None and capture.spill_path.read_bytes() == b"abc"


def test_spill_files_are_private_and_unique(tmp_path: Path) -> None:
    spill_dir = tmp_path / "state" / "output"
    first_handle, first = open_spill_file(spill_dir, "stdout")
    second_handle, second = open_spill_file(spill_dir, "stdout")
    first_handle.close()
    second_handle.close()
    assert first != second
    assert stat.S_IMODE(spill_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(first.stat().st_mode) == 0o600


def test_truncate_text_leaves_short_text_alone(tmp_path: Path) -> None:
    assert truncate_text("hello", 5, tmp_path / "spill") == ("hello", None)
    assert not (tmp_path / "spill").exists()


def test_truncate_text_caps_and_spills(tmp_path: Path) -> None:
    text = "".join(f"row {i}\n" for i in range(5000)) + "ünïcödé end"
    capped, path = truncate_text(text, 200, tmp_path / "spill")
    assert path is not None
    assert path.read_text(encoding="utf-8") == text
    head, tail = text[:100], text[-100:]
    head, tail = head[: head.rindex("\n") + 1], tail[tail.index("\n") + 1:]  # whole lines only
    marker = omission_marker(len(text) - len(head) - len(tail), path, unit="characters").lstrip("\n")
    assert capped == head + marker + tail
    assert capped.endswith("ünïcödé end")


def test_truncate_text_without_spill_dir_and_with_lone_surrogates() -> None:
    text = "a" * 50 + "\ud800" + "b" * 50
    capped, path = truncate_text(text, 10, None)
    assert path is None
    assert capped == "aaaaa ... [91 characters omitted] ... bbbbb"


def test_truncate_text_spills_lone_surrogates_without_failing(tmp_path: Path) -> None:
    text = "\ud800" * 30
    capped, path = truncate_text(text, 4, tmp_path)
    assert path is not None and path.stat().st_size > 0
    assert "[26 characters omitted; full output:" in capped


def test_a_spill_file_stops_at_the_budget_and_says_so(tmp_path: Path) -> None:
    budget = SaveBudget(2000)
    out, err = OutputCapture(40, tmp_path, "stdout", budget), OutputCapture(40, tmp_path, "stderr", budget)
    _feed_all(out, b"o" * 700, chunk=64)
    _feed_all(err, b"e" * 1000, chunk=64)
    _feed_all(err, b"\nthe end\n", chunk=64)  # past the cut: not saved, but still the tail
    out.close()
    err.close()
    assert budget.exhausted and out.saved == 700 and 0 < err.saved < 1000
    assert out.spill_path is not None and out.spill_path.read_bytes() == b"o" * 700
    assert err.spill_path is not None and err.spill_path.read_bytes() == b"e" * err.saved + cut_note(2000)
    assert out.spill_path.stat().st_size + err.spill_path.stat().st_size <= 2000
    assert f"first {err.saved:,} bytes saved: {err.spill_path}" in err.text()
    assert err.text().endswith("eeee\nthe end\n")
    assert f"full output: {out.spill_path}" in out.text()


def test_a_tiny_budget_still_never_passes_its_limit(tmp_path: Path) -> None:
    budget = SaveBudget(100)
    with OutputCapture(10, tmp_path, "stdout", budget) as out:
        _feed_all(out, b"o" * 500, chunk=64)
    assert out.spill_path is not None and out.spill_path.stat().st_size == 100
    assert out.spill_path.read_bytes().startswith(b"o" * 50 + b"\n[nami stopped saving here")


def test_no_budget_saves_nothing(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    with OutputCapture(10, spill, "stdout", SaveBudget(0)) as out:
        _feed_all(out, b"o" * 500, chunk=64)
    assert truncate_text("x" * 5000, 100, spill, max_saved=0)[1] is None
    assert out.spill_path is None and not spill.exists()
    assert out.text().endswith("ooooo") and "[490 bytes omitted]" in out.text()


def test_truncate_text_saves_at_most_the_budget(tmp_path: Path) -> None:
    capped, path = truncate_text("x" * 5000, 100, tmp_path / "spill", max_saved=1000)
    assert path is not None and path.read_bytes() == b"x" * 600 + cut_note(1000)
    assert f"first 600 bytes saved: {path}" in capped


def test_spill_files_never_go_through_a_planted_symlink(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    spill_dir = tmp_path / "spill"
    spill_dir.symlink_to(target, target_is_directory=True)
    capture = OutputCapture(4, spill_dir)
    _feed_all(capture, b"abcdefgh", chunk=3)
    capture.close()
    assert list(target.iterdir()) == []
    assert capture.spill_path is None and "[4 bytes omitted]" in capture.text()


def test_lines_are_never_cut_in_half_so_no_fragment_looks_like_a_value(tmp_path: Path) -> None:
    data = b"".join(b"%d\n" % i for i in range(1, 100_001))  # seq 1 100000
    capture = OutputCapture(200, tmp_path)
    _feed_all(capture, data, chunk=4096)
    head, marker, rest = capture.text().partition("... [")
    tail = rest.split("] ...\n", 1)[1]
    assert head.endswith("\n") and marker
    assert head.splitlines() + tail.splitlines() == [str(n) for n in range(1, 37)] + [str(n) for n in range(99_985, 100_001)]
    assert f"[{len(data) - len(head) - len(tail):,} bytes omitted" in capture.text()


def test_a_long_line_between_short_ones_is_cut_inside_with_the_marker() -> None:
    text = "first\n" + "x" * 1000 + "\nlast\n"
    capped, _ = truncate_text(text, 100, None)
    assert capped.startswith("first\n" + "x" * 44 + " ... [")  # trimming to "first\n" would lose most of the head
    assert capped.endswith("] ... " + "x" * 44 + "\nlast\n")
