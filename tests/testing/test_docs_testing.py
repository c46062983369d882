"""docs/testing.md is executable: its Python blocks run as a user's test suite, its JSON script loads."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from nami_yaml.testing import response_from_dict
from nami_yaml.testing.script_file import load_script

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_python_examples_pass_as_a_user_test_suite(tmp_path: Path) -> None:
    blocks = _blocks("python")
    conftest = [b for b in blocks if b.startswith("# conftest.py")]
    tests = [b for b in blocks if not b.startswith("# conftest.py")]
    assert len(conftest) == 1 and tests
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(conftest[0])
    for i, block in enumerate(tests):
        (tmp_path / f"test_doc_{i}.py").write_text(block)
    expected = sum(len(re.findall(r"^def test_", b, flags=re.M)) for b in tests)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{expected} passed" in result.stdout


def test_json_script_examples_load(tmp_path: Path) -> None:
    block, by_task = _blocks("json")
    for number, example in enumerate((block, by_task)):
        (tmp_path / f"{number}.json").write_text(example)
        load_script(tmp_path / f"{number}.json")  # passes the schema check
    assert list(load_script(tmp_path / "1.json").tasks) == ["nginx", "disk"]
    responses = [response_from_dict(item) for item in json.loads(block)]
    assert [r.status for r in responses] == [200, 200, 429, 200]
    assert responses[0].calls[0].name == "list_dir"
    assert responses[3].content == "a plain string is a text answer"
