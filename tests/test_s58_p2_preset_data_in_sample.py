"""``tokrag analyze --preset P`` (s58 p2, after s57 f3's preset data record): it stored P's data record in
results.json but printed none of it, so a user could not see on the screen what P was calibrated on; and its in-sample
check (the calibrated row's ``IN-SAMPLE`` mark, the note under the tables, ``preset_in_sample``) compared the split and
n only: any dev data with the preset's split was called in-sample, a different file too. Now the command prints one
line per data set of P's record (``preset P (sha256 S): calibrated on ...``, :func:`tasks.calibrate.data_lines`), and
where both P and the run record the data files' SHA-256 the check compares the files' contents (paths and names left
out: a moved copy is the same data); a preset without them keeps the old rule and the note says so. On the fake
4-layer model of :mod:`tests.analyze_fakes`, whose samples come with a data record built by the real
:func:`tasks.provenance.qa_provenance` over small files."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.analyze_fakes import strict_record as _record  # one strict token per sample (the shared toy records)

IN_SAMPLE_NOTE = ("note: the calibrated row is in-sample: the preset was calibrated on these dev samples (wiki 4 of 6), "
                  "so its AUC is partly its dev fit, not a held-out estimate; run --split test for that")


def _write(folder: Path, questions: str = "q.jsonl", corpus: str = "passages.jsonl", answer: str = "a") -> dict:
    """A questions file and a corpus file in ``folder``; ``answer`` changes the questions file's bytes (not its size)."""
    folder.mkdir(parents=True, exist_ok=True)
    q, c = folder / questions, folder / corpus
    q.write_text('{"qid": "q0", "question": "who?", "answers": ["%s"]}\n' % answer, encoding="utf-8")
    c.write_text('{"id": "p0", "title": "T", "text": "a"}\n', encoding="utf-8")
    return {"questions": q, "corpus": c}


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """The fake model, its samples recorded as read from ``fake.files`` (``questions``, ``corpus``; None: the loader
    records no data, ``tokrag_data`` null)."""
    from tasks import analyze
    from tasks.provenance import qa_provenance
    from tests.analyze_fakes import install_fake

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))  # the file-hash memo of path_record
    state = install_fake(monkeypatch, _record, device="cpu")
    state.files = _write(tmp_path / "data")
    plain = analyze.samples_for

    def samples_for(name, split, n, *a, provenance=None, **k):
        out = plain(name, split, n, *a, **k)
        if provenance is not None and state.files is not None:
            provenance.update(qa_provenance("byo", {k_: str(v) for k_, v in state.files.items()},
                                            {"run_fingerprint": f"run-{name}",
                                             "questions": {"split": split, "in_split": len(out)}}))
        return out

    monkeypatch.setattr(analyze, "samples_for", samples_for)
    return state


def _calibrate(tmp_path: Path, capsys) -> Path:
    from tasks import calibrate

    assert calibrate.main(["--data", "wiki", "--out", str(tmp_path / "cal"), "--n", "4", "--bootstrap", "5"]) == 0
    capsys.readouterr()
    return tmp_path / "cal" / "tokrag_preset.json"


def _analyze(tmp_path: Path, preset: Path, out: str, split: str = "dev") -> dict:
    from tasks import analyze

    assert analyze.main(["--data", "wiki", "--split", split, "--out", str(tmp_path / out), "--n", "6", "--bootstrap",
                         "5", "--preset", str(preset)]) == 0
    return json.loads((tmp_path / out / "results.json").read_text())


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_analyze_prints_the_presets_data_record(fake, tmp_path, capsys) -> None:
    """The line tokrag calibrate printed, headed by the preset's path and SHA-256, on a test run too; a preset written
    before the record existed and one whose loader recorded none say so."""
    preset = _calibrate(tmp_path, capsys)
    q, c = fake.files["questions"], fake.files["corpus"]
    psha = _sha(preset)[:12]
    res = _analyze(tmp_path, preset, "an", split="test")
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("preset ")]
    assert lines == [f"preset {preset} (sha256 {psha}): calibrated on wiki dev (4 samples): corpus {c.resolve()} "
                     f"(sha256 {_sha(c)[:12]}); questions {q.resolve()} (sha256 {_sha(q)[:12]}); run run-wiki; split dev "
                     "(4 questions in it)"]
    assert res["preset"]["calibration"]["data"]["wiki"]["tokrag_data"]["files"]["questions"]["sha256"] == _sha(q)

    raw = json.loads(preset.read_text())  # as a preset written before 2026-12-07: no tokrag_data
    del raw["calibration"]["data"]["wiki"]["tokrag_data"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(raw))
    _analyze(tmp_path, old, "an_old", split="test")
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("preset ")]
    assert lines == [f"preset {old} (sha256 {_sha(old)[:12]}): calibrated on wiki dev (4 samples): its data files are "
                     "not recorded (a preset written before 2026-12-07)"]

    raw["calibration"]["data"]["wiki"]["tokrag_data"] = None  # written now, its loader built no record
    old.write_text(json.dumps(raw))
    _analyze(tmp_path, old, "an_none", split="test")
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("preset ")]
    assert lines == [f"preset {old} (sha256 {_sha(old)[:12]}): calibrated on wiki dev (4 samples): its loader recorded "
                     "no data files"]


def test_the_same_files_are_in_sample_by_sha256_also_moved_and_renamed(fake, tmp_path, capsys) -> None:
    preset = _calibrate(tmp_path, capsys)
    res = _analyze(tmp_path, preset, "an")
    out = capsys.readouterr().out
    assert res["preset_in_sample"] == {"wiki": 4}
    assert res["preset_in_sample_checks"] == {"wiki": {"shared": 4, "by": "sha256", "why": None}}
    assert res["results"]["wiki"]["policies"]["calibrated"]["describe"].endswith(
        "(IN-SAMPLE: calibrated on these dev samples)")
    assert IN_SAMPLE_NOTE in out.splitlines()
    assert "note: wiki: the same data files as the preset's (by SHA-256)" in out.splitlines()

    moved = tmp_path / "elsewhere"  # the calibration files copied to another folder under other names
    moved.mkdir()
    fake.files = {"questions": moved / "dev_questions.jsonl", "corpus": moved / "corpus.jsonl"}
    shutil.copyfile(tmp_path / "data" / "q.jsonl", fake.files["questions"])
    shutil.copyfile(tmp_path / "data" / "passages.jsonl", fake.files["corpus"])
    res = _analyze(tmp_path, preset, "an_moved")
    out = capsys.readouterr().out
    assert res["configs"]["wiki"]["tokrag_data"]["files"]["questions"]["path"] == str(fake.files["questions"].resolve())
    assert res["preset_in_sample"] == {"wiki": 4}
    assert res["preset_in_sample_checks"]["wiki"]["by"] == "sha256"
    assert "note: wiki: the same data files as the preset's (by SHA-256)" in out.splitlines()


def test_a_different_file_with_the_same_split_and_n_is_not_in_sample(fake, tmp_path, capsys) -> None:
    """The old rule called it in-sample (dev split, n); its questions file has other bytes, same name and size."""
    preset = _calibrate(tmp_path, capsys)
    fake.files = _write(tmp_path / "other", answer="b")
    assert _sha(fake.files["questions"]) != _sha(tmp_path / "data" / "q.jsonl")
    res = _analyze(tmp_path, preset, "an")
    out = capsys.readouterr().out
    assert res["preset_in_sample"] == {}
    assert res["preset_in_sample_checks"] == {"wiki": {"shared": 0, "by": "sha256", "why": None}}
    assert "IN-SAMPLE" not in res["results"]["wiki"]["policies"]["calibrated"]["describe"]
    assert "calibrated row is in-sample" not in out
    assert ("note: wiki: not in-sample: the preset was calibrated on other wiki dev data files (their SHA-256 differ "
            "from this run's)") in out.splitlines()


def test_a_preset_without_sha256_keeps_the_old_rule_and_says_so(fake, tmp_path, capsys) -> None:
    preset = _calibrate(tmp_path, capsys)
    raw = json.loads(preset.read_text())
    del raw["calibration"]["data"]["wiki"]["tokrag_data"]  # as a preset written before 2026-12-07
    old = tmp_path / "old.json"
    old.write_text(json.dumps(raw))
    fake.files = _write(tmp_path / "other", answer="b")  # other data: the old rule cannot tell
    res = _analyze(tmp_path, old, "an")
    out = capsys.readouterr().out.splitlines()
    assert res["preset_in_sample"] == {"wiki": 4}
    assert res["preset_in_sample_checks"] == {"wiki": {
        "shared": 4, "by": "split and n",
        "why": "the preset records no SHA-256 of its data (written before 2026-12-07)"}}
    assert res["results"]["wiki"]["policies"]["calibrated"]["describe"].endswith(
        "(IN-SAMPLE: calibrated on these dev samples)")
    assert IN_SAMPLE_NOTE in out
    assert ("note: wiki: in-sample judged by split and n only, as before 2026-12-07: the preset records no SHA-256 of "
            "its data (written before 2026-12-07), so another file with the same split and n would count too") in out

    fake.files = None  # a preset with the record, a run whose loader recorded none
    res = _analyze(tmp_path, preset, "an_none")
    out = capsys.readouterr().out.splitlines()
    assert res["preset_in_sample"] == {"wiki": 4}
    assert ("note: wiki: in-sample judged by split and n only, as before 2026-12-07: this run's data records no "
            "SHA-256 (its loader recorded no data files), so another file with the same split and n would count too"
            ) in out


def test_data_digests_leave_out_paths_and_names() -> None:
    from tasks.analyze import data_digests

    a = {"files": {"questions": {"path": "/x/q.jsonl", "sha256": "11" * 32},
                   "wiki_vital_summaries/summaries_en-us.json": {"path": "/d/wiki_vital_summaries/summaries_en-us.json",
                                                                 "sha256": "22" * 32},
                   "dpr_wiki_sample1k": {"path": "/d/dpr_wiki_sample1k", "fingerprint": "33" * 8}}}
    b = {"files": {"q": {"path": "/y/other.jsonl", "sha256": "11" * 32},
                   "corpus": {"path": "/wheel/summaries_en-us.json", "sha256": "22" * 32},
                   "f": {"path": "/e/f", "fingerprint": "33" * 8}}}
    assert data_digests(a) == data_digests(b) == ["folder:" + "33" * 8, "sha256:" + "11" * 32, "sha256:" + "22" * 32]
    assert data_digests({"files": {"questions": {"hub_id": "org/qs", "split": "validation"}}}) is None  # no SHA-256
    assert data_digests(None) is None and data_digests({"corpus": {"name": "x"}}) is None
