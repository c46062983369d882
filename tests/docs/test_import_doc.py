"""docs/import.md's HolmesGPT example, imported: the file nami writes is the one the page shows."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.helpers import nami, write
from tests.programs import need_import_extra

DOC = Path(__file__).resolve().parents[2] / "docs" / "import.md"
BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)


def test_the_holmes_example_imports_to_the_file_shown(workdir: Path) -> None:
    need_import_extra()
    source, shown = BLOCK.findall(DOC.read_text(encoding="utf-8"))[:2]
    assert source.startswith("# not a nami file: a HolmesGPT toolset")
    write(workdir / "kubernetes.yaml", source)
    result = nami("import", "holmes", "kubernetes.yaml")
    assert result.exit_code == 0, result.output
    written = (workdir / "tools" / "kubernetes.yaml").read_text(encoding="utf-8")
    assert written.split("\n", 3)[3] == shown  # the page leaves out the three header comment lines
    assert yaml.safe_load(written) == yaml.safe_load(shown)
    for said in ("argv: kubectl describe {kind} {name} [-n {namespace}]", "risk read: kubectl describe: a read verb",
                 "parameter 'keyword' is untyped", "transformer 'llm_summarize'",
                 "output filter grep: {keyword} replaces the stage `| grep {keyword}`",
                 "pipeline (no shell): kubectl get pods -A -o json | jq -r .items[].spec.containers[].image | sort -u",
                 "argv: kubectl get services [-n {namespace}] [-A {!namespace}] -o wide",
                 'defaults: declared once for the 5 tools (risk: "read", sandbox: {"network": true'):
        assert said in result.output
