"""A baseline file that starts with a UTF-8 byte order mark (saved by an editor as "UTF-8 with BOM", or by Windows
PowerShell's ``Set-Content -Encoding utf8`` after a tolerance was edited) is read (s59 b3, breaker): it was refused as
``invalid JSON (Unexpected UTF-8 BOM ...)``, exit 2 in every CI job, and ``check --write`` would not replace it (not a
valid baseline). The mark is skipped; the checks and the rewritten file are those of the same file without it."""

from __future__ import annotations

import json

import pytest

from leaderboards.check import load_baseline
from leaderboards.cli import main as lb_main
from retrieval.errors import ConfigError
from tests.leaderboard_helpers import run_toy_spec


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    root = tmp_path_factory.mktemp("bom")
    spec, runs = run_toy_spec(root, tasks=["toy_qa"], limit=3)
    base = root / "b.json"
    assert lb_main(["check", str(spec.path), "--runs-dir", str(runs), "--baseline", str(base), "--write"]) == 0
    return spec.path, runs, base.read_bytes()


def test_a_baseline_with_a_byte_order_mark_is_checked(finished, tmp_path, capsys):
    spec, runs, plain = finished
    b = json.loads(plain)
    b["cells"]["standard/toy_qa/seed1"]["em"] += 0.5  # beyond any tolerance: the check reads the values
    plain_edit = json.dumps(b, indent=2).encode("utf-8")
    (tmp_path / "plain.json").write_bytes(plain_edit)
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + plain_edit)
    assert load_baseline(tmp_path / "bom.json") == load_baseline(tmp_path / "plain.json")
    outs = []
    for name in ("plain.json", "bom.json"):
        capsys.readouterr()
        assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(tmp_path / name)]) == 1
        outs.append(capsys.readouterr().out.replace(name, "B"))
    assert outs[0] == outs[1] and "FAIL standard/toy_qa/seed1  em = " in outs[1]
    # --write replaces it (keeping its tolerances), without the mark
    assert lb_main(["check", str(spec), "--runs-dir", str(runs), "--baseline", str(tmp_path / "bom.json"), "--write"]) == 0
    assert (tmp_path / "bom.json").read_bytes() == plain


def test_other_bytes_before_the_json_are_still_refused(tmp_path):
    path = tmp_path / "b.json"
    path.write_bytes(b"\xff\xfe{}")  # UTF-16's mark: not UTF-8
    with pytest.raises(ConfigError, match=r"^baseline .*b\.json: invalid JSON \("):
        load_baseline(path)
