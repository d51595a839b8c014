"""An empty path given to tokrag leaderboard (``--runs-dir "$RUNS"`` with RUNS unset) silently meant the default
(s52 b1): ``run --runs-dir ''`` read and wrote ./runs, ``report --out ''`` wrote the report to <runs>/reports/<name>,
``check --baseline ''`` read the folder '.' ('baseline . is a folder'), and the spec argument '' the working directory
('leaderboard spec /cwd is a folder'). Each is now one line naming the option, before any work."""

import pytest

from leaderboards.cli import main
from retrieval.errors import ConfigError


@pytest.mark.parametrize("argv, line", [
    (["run", "S", "--runs-dir", "", "--estimate"],
     "run --runs-dir is empty (an unset shell variable?); give a folder, or leave the option out for the default"),
    (["report", "S", "--out", " "],
     "report --out is empty (an unset shell variable?); give a folder, or leave the option out for the default"),
    (["check", "S", "--baseline", ""], "check --baseline is empty (an unset shell variable?); give a file"),
    (["rescore", ""], "rescore the spec argument is empty (an unset shell variable?); give a file"),
])
def test_an_empty_path_is_refused(argv, line):
    with pytest.raises(ConfigError) as exc:
        main([a.replace("S", "leaderboards/specs/ci.yaml") if a == "S" else a for a in argv])
    assert str(exc.value) == line
