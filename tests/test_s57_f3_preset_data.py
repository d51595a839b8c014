"""A ``tokrag calibrate`` preset records what it was calibrated on (s57 f3): the results of a run record each task's
data (``tokrag_data``: the files read with their SHA-256, the corpus and run fingerprints, the split), and ``tokrag
analyze``'s results.json each data set's, but the preset copied only the data configuration (data set, split, n,
k, runs, ...), so a user holding only a preset could not tell which files it was calibrated on. Now each
``calibration.data.<data set>`` holds the ``tokrag_data`` :func:`tasks.analyze.collect_records` built for those
samples (the same record, the same shape), ``tokrag calibrate`` (and the benchmark that prints a preset) and the
leaderboard report's resolved method settings (from the results' ``config.tokrag_preset``) show it, one line per
data set, and a preset written before loads and says that it does not record them. The calibrated
params and AUCs are the same with it. On a fake 4-layer model (:mod:`tests.analyze_fakes`) whose samples come with
a record built by the real :func:`tasks.provenance.qa_provenance` over small files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.analyze_fakes import strict_record as _record  # one strict token per sample (the shared toy records)

ROOT = Path(__file__).resolve().parents[1]

# tokrag_data of 2 NQ dev samples as tasks.analyze.samples_for('nq', 'dev', 2, provenance=d) built it from the shared
# data folder (/work/scratch/s57/f3/real_tokrag_data_dev.json), tokrag's own record left out
NQ_DEV = {
    "files": {
        "nq_open_oracle/nq-open-oracle.jsonl.gz": {
            "path": "/data/nq_open_oracle/nq-open-oracle.jsonl.gz",
            "sha256": "6a7f72b846f663a133ef952244e5a4e43f06bcf190afe34e8fbe687ce0d1653e"},
        "nq_open/NQ-open.dev.jsonl": {
            "path": "/data/nq_open/NQ-open.dev.jsonl",
            "sha256": "f15567f38099f3615f5b8a685c0aef449c11ad90d3da3735e8d1b98115b40616"},
        "wiki_vital_summaries/summaries_en-us.json": {
            "path": "/data/wiki_vital_summaries/summaries_en-us.json",
            "sha256": "05ed445d555bcced1b3a3a42fecbed2ce426c1034429eb15ed043b166966b052"}},
    "corpus": {"name": "nq-wiki-12k", "passages": 12633, "fingerprint": "527e6ad92a74116b", "source": "/data"},
    "run_fingerprint": "6efb46ccdd1fd1d789fd",
    "retrieval": {"retriever": "bm25", "params": {"k1": 0.9, "b": 0.4}},
    "questions": {"split": "dev", "in_split": 188, "max_docs": 2},
}


@pytest.fixture
def fake(monkeypatch, tmp_path):
    from tests.analyze_fakes import install_fake

    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))  # the file-hash memo of path_record
    return install_fake(monkeypatch, _record, device="cpu")


def _with_provenance(monkeypatch, tmp_path):
    """Make the fake's samples come with a data record built by the real builder over two small files; returns
    ``{data set: record}`` as built."""
    from tasks import analyze
    from tasks.provenance import qa_provenance

    q, c = tmp_path / "data" / "q.jsonl", tmp_path / "data" / "passages.jsonl"
    q.parent.mkdir()
    q.write_text('{"qid": "q0", "question": "who?", "answers": ["a"]}\n', encoding="utf-8")
    c.write_text('{"id": "p0", "title": "T", "text": "a"}\n', encoding="utf-8")
    built: dict[str, dict] = {}
    plain = analyze.samples_for

    def samples_for(name, split, n, *a, provenance=None, **k):
        out = plain(name, split, n, *a, **k)
        if provenance is not None:
            rec = qa_provenance("byo", {"questions": str(q), "corpus": str(c)},
                                {"run_fingerprint": f"run-{name}", "questions": {"split": split, "in_split": n}})
            provenance.update(rec)
            built[name] = json.loads(json.dumps(rec))
        return out

    monkeypatch.setattr(analyze, "samples_for", samples_for)
    return built, q, c


def _numbers(preset: dict) -> dict:
    """A preset's params and calibration without its data records and timings (what the calibration computed)."""
    cal = {k: v for k, v in preset["calibration"].items()
           if k not in ("seconds", "seconds_known", "samples_untimed", "wall_seconds")}
    cal["data"] = {name: {k: v for k, v in d.items() if k != "tokrag_data"} for name, d in cal["data"].items()}
    return {"params": preset["params"], "calibration": cal}


def test_the_preset_records_each_data_sets_files_as_the_results_do(fake, tmp_path, monkeypatch, capsys) -> None:
    from tasks import calibrate
    from tokrag_model.methods.tokrag import read_preset

    assert calibrate.main(["--out", str(tmp_path / "plain"), "--n", "6"]) == 0  # the fake's samples: no record
    plain = json.loads((tmp_path / "plain" / "tokrag_preset.json").read_text())
    assert {name: d.get("tokrag_data") for name, d in plain["calibration"]["data"].items()} == {"wiki": None, "nq": None}
    capsys.readouterr()

    built, q, c = _with_provenance(monkeypatch, tmp_path)
    assert calibrate.main(["--out", str(tmp_path / "cal"), "--n", "6"]) == 0
    out = capsys.readouterr().out
    path = tmp_path / "cal" / "tokrag_preset.json"
    preset = json.loads(path.read_text())
    data = preset["calibration"]["data"]
    assert set(built) == {"wiki", "nq"}
    for name in ("wiki", "nq"):
        assert data[name]["tokrag_data"] == built[name]  # the record collect_records built, as built
        files = data[name]["tokrag_data"]["files"]
        assert files["questions"] == {"path": str(q.resolve()),
                                      "sha256": hashlib.sha256(q.read_bytes()).hexdigest()}
        assert files["corpus"]["sha256"] == hashlib.sha256(c.read_bytes()).hexdigest()
        assert data[name]["tokrag_data"]["run_fingerprint"] == f"run-{name}"
        assert data[name]["tokrag_data"]["questions"] == {"split": "dev", "in_split": 6}
    assert _numbers(preset) == _numbers(plain)  # the calibrated params and AUCs do not change

    loaded = read_preset(path, "fp0", 4)  # what lm_eval's config.tokrag_preset and analyze's results.json copy
    assert loaded["calibration"]["data"]["nq"]["tokrag_data"] == built["nq"]
    qsha, csha = hashlib.sha256(q.read_bytes()).hexdigest()[:12], hashlib.sha256(c.read_bytes()).hexdigest()[:12]
    for name in ("wiki", "nq"):
        assert (f"calibrated on {name} dev (6 samples): corpus {c.resolve()} (sha256 {csha}); questions {q.resolve()} "
                f"(sha256 {qsha}); run run-{name}; split dev (6 questions in it)" in out.splitlines()), out


def test_data_lines_of_a_real_nq_record() -> None:
    from tasks.calibrate import data_lines

    cal = {"data": {"nq": {"data": "nq", "split": "dev", "n": 2, "tokrag_data": NQ_DEV}}}
    assert data_lines(cal) == [
        "calibrated on nq dev (2 samples): nq_open_oracle/nq-open-oracle.jsonl.gz (sha256 6a7f72b846f6), "
        "nq_open/NQ-open.dev.jsonl (sha256 f15567f38099), wiki_vital_summaries/summaries_en-us.json (sha256 "
        "05ed445d555b) in /data; corpus nq-wiki-12k (12633 passages, fingerprint 527e6ad92a74116b); run "
        "6efb46ccdd1fd1d789fd; split dev (188 questions in it)"]
    hub = {"files": {"questions": {"hub_id": "org/qs", "split": "validation"}}, "corpus": {"name": "prebuilt:x"}}
    assert data_lines({"data": {"nq": {"split": "dev", "n": 3, "tokrag_data": hub}}}) == [
        "calibrated on nq dev (3 samples): questions hub org/qs split validation; corpus prebuilt:x"]
    assert data_lines({"data": {"wiki": {"split": "dev", "n": 6, "tokrag_data": None}}}) == [
        "calibrated on wiki dev (6 samples): its loader recorded no data files"]  # written now, the loader gave none
    assert data_lines({"policy": "fixed"}) == []  # a summary straight from calibrate_records: nothing to say


def test_a_preset_written_before_loads_and_says_it_records_no_files(capsys) -> None:
    """The committed SmolLM2 preset (written before the record existed): read_preset loads it as before, and
    print_preset (tokrag calibrate's view, benchmarks/tokrag_analysis.py's of a --preset) says what it lacks."""
    from tasks.calibrate import print_preset
    from tokrag_model.methods.tokrag import read_preset

    path = ROOT / "leaderboards/presets/tokrag-smollm2-135m-instruct.json"
    raw = json.loads(path.read_text())
    assert all("tokrag_data" not in d for d in raw["calibration"]["data"].values())
    preset = read_preset(path, raw["model"]["fingerprint"], raw["model"]["n_layers"])
    assert preset["params"] == raw["params"]
    print_preset(preset)
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("calibrated on ")] == [
        "calibrated on nq dev (120 samples): its data files are not recorded (a preset written before 2026-12-07)",
        "calibrated on wiki dev (120 samples): its data files are not recorded (a preset written before 2026-12-07)"]


def test_the_report_says_what_each_methods_preset_was_calibrated_on(tmp_path) -> None:
    """The report's resolved method settings (markdown, JSON, HTML) name each preset a method ran with and what it was
    calibrated on, from the results' ``config.tokrag_preset`` (synthetic finished cells, tests/s51_f4_synthetic.py):
    ``other`` ran with a preset that records its NQ data, ``none`` with one written before it was recorded (each named
    once, though each ran in two cells: seeds 1 and 2), ``standard`` with none."""
    from leaderboards.page import render_html
    from leaderboards.report import compute, render_markdown

    from tests.s51_f4_synthetic import synthetic

    spec, loaded = synthetic(tmp_path, {m: {"answer_match": [1.0, 0.0]} for m in ("standard", "none", "other")},
                             extra={"seeds": [1, 2]})
    assert len(loaded) == 6
    new = {"path": "/abs/cal/new.json", "sha256": "ab" * 32,
           "calibration": {"data": {"nq": {"data": "nq", "split": "dev", "n": 2, "tokrag_data": NQ_DEV}}}}
    old = {"path": "/abs/leaderboards/presets/old.json", "sha256": "cd" * 32,
           "calibration": {"data": {"wiki": {"data": "wiki", "split": "dev", "n": 120}}}}
    for cell, _key, d in loaded.values():
        preset = {"other": new, "none": old}.get(cell.method.name)
        rc = {"pretrained": "toy", **({"preset": "cal/new.json"} if preset is new else {})}
        d["results"]["config"] = {"tokrag_resolved_config": rc, "tokrag_preset": preset}
    data = compute(spec, loaded, timings=False)
    lines = [x for x in data["models"][0]["method_resolved"] if " preset " in x]
    assert lines == [
        "none: preset '/abs/leaderboards/presets/old.json' (sha256 cdcdcdcdcdcd) calibrated on wiki dev (120 samples): its "
        "data files are not recorded (a preset written before 2026-12-07)",
        "other: preset 'cal/new.json' (sha256 abababababab) calibrated on nq dev (2 samples): "
        "nq_open_oracle/nq-open-oracle.jsonl.gz (sha256 6a7f72b846f6), nq_open/NQ-open.dev.jsonl (sha256 f15567f38099), "
        "wiki_vital_summaries/summaries_en-us.json (sha256 05ed445d555b) in /data; corpus nq-wiki-12k (12633 passages, "
        "fingerprint 527e6ad92a74116b); run 6efb46ccdd1fd1d789fd; split dev (188 questions in it)"]
    md = render_markdown(data)
    assert "Resolved method settings, as run:" in md and all(line in md for line in lines)
    assert "calibrated on nq dev (2 samples)" in render_html(data, [], [])
