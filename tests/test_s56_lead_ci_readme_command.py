"""CI calls the README's test command (the project's rule: `.ci/run` "must call the README's test command"): the pytest
part of the README's test block is, word for word, the one pytest line of `.ci/run`. s56 t2 (ecbadaa) ran the
reliability group in the same session as the suite in CI only, while the README still said `pytest -n 2` ("CI runs
exactly this")."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _readme_test_command() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    after = text.split("**The tests**", 1)[1]
    block = re.search(r"```bash\n(.*?)```", after, re.S).group(1).strip()
    return shlex.split(block.split("&&")[-1])


def test_ci_runs_the_readme_test_command_word_for_word():
    ci = [shlex.split(line) for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if "pytest" in line.split("#", 1)[0] and not line.lstrip().startswith("#")]
    assert len(ci) == 1, ci
    assert _readme_test_command() == ci[0]
    assert _readme_test_command() == ["TOKRAG_DATA_DIR=../shared/data", "pytest", "-n", "2", "-m",
                                      "reliability or not reliability"]
