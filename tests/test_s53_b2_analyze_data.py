"""``tokrag analyze`` / ``tokrag calibrate`` with ``--data nq`` and a data folder that lacks part of what the nq
samples need (s53 b2; /work/scratch/s53/b2/probe_analyze_data.sh, probe_analyze_data.txt): a ``--data-dir`` without
``nq_open_oracle/nq-open-oracle.jsonl.gz`` (the samples are ``nq_oracle_bm25``'s questions) or, with ``--nq-corpus
nq-dpr-1k``, without ``dpr_wiki_sample1k/sample_data.jsonl``, passed the pre-load check and was refused only after the
model loaded (43 s and 37 s for SmolLM2-135M on the shared 2-core machine; minutes for a 7B model). Now both are
refused before it, with the loaders' own lines."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError


@pytest.fixture
def no_model(monkeypatch, tmp_path):
    from tasks import analyze, calibrate

    def load(_args):
        raise AssertionError("the model was loaded before the data folder was checked")

    monkeypatch.setattr(analyze, "load_lm", load)
    monkeypatch.setattr(calibrate, "load_lm", load)
    return {"analyze": (analyze.main, []), "calibrate": (calibrate.main, ["--split", "dev"])}


def _folder(root, *names):
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).touch()
    return root


@pytest.mark.parametrize("command", ["analyze", "calibrate"])
def test_a_data_folder_without_the_oracle_file_is_refused_before_the_model_loads(no_model, tmp_path, command):
    main, extra = no_model[command]
    data = _folder(tmp_path / "data", "nq_open/NQ-open.dev.jsonl", "dpr_wiki_sample1k/sample_data.jsonl")
    with pytest.raises(ConfigError) as exc:
        main(["--data", "nq", "--n", "1", "--nq-corpus", "nq-dpr-1k", "--data-dir", str(data),
              "--out", str(tmp_path / "out")] + extra)
    assert str(exc.value) == (f"NQ oracle file {data}/nq_open_oracle/nq-open-oracle.jsonl.gz does not exist: point "
                              "TOKRAG_DATA_DIR (or --metadata data_dir; for tokrag analyze, --data-dir) at a folder laid "
                              "out like ../shared/data (nq_open_oracle/nq-open-oracle.jsonl.gz)")


@pytest.mark.parametrize("command", ["analyze", "calibrate"])
def test_a_data_folder_without_the_named_corpus_is_refused_before_the_model_loads(no_model, tmp_path, command):
    main, extra = no_model[command]
    data = _folder(tmp_path / "data", "nq_open_oracle/nq-open-oracle.jsonl.gz")
    with pytest.raises(ConfigError) as exc:
        main(["--data", "nq", "--n", "1", "--nq-corpus", "nq-dpr-1k", "--data-dir", str(data),
              "--out", str(tmp_path / "out")] + extra)
    assert str(exc.value) == (f"{data}/dpr_wiki_sample1k/sample_data.jsonl not found: the data folder must contain "
                              "dpr_wiki_sample1k/sample_data.jsonl")


def test_wiki_alone_needs_no_nq_data(tmp_path):
    import argparse

    from tasks.analyze import check_data_paths

    check_data_paths(argparse.Namespace(data="wiki", n=1, nq_corpus="nq-dpr-1k", data_dir=str(tmp_path)))  # no error
