"""An output path that is a symbolic link to a file is written through the link, atomically, and the link stays (s53 f4;
s52 r1's note; /work/scratch/s53/f4/repro2.old.txt, repro2.new.txt).

``retrieval.io``'s atomic writer renamed its temporary file over the path itself, so ``tokrag retrieve --output
link.trec`` (and its ctxs and ``.meta.json``), ``check --write --baseline link.json`` and ``calibrate``'s preset replaced
the link with a regular file and left the file it pointed to with its old content. The write now goes to the link's
target (a temporary file beside the target, renamed over it: :func:`retrieval.io.write_target`), as ``open(path, "w")``,
a shell's ``>`` and most tools write."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from retrieval.errors import ConfigError


def _leftovers(*folders: Path) -> list[str]:
    return sorted(p.name for d in folders for p in d.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_goes_through_a_link_and_keeps_it_and_the_mode(tmp_path):
    from retrieval.io import atomic_write_bytes, atomic_write_json

    real, links = tmp_path / "real", tmp_path / "links"
    real.mkdir()
    links.mkdir()
    target = real / "data.json"
    target.write_text("OLD\n")
    os.chmod(target, 0o640)
    link = links / "data.json"
    link.symlink_to(target)
    atomic_write_json(link, {"a": 1})
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == '{\n  "a": 1\n}\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _leftovers(real, links) == []
    # a chain of links (relative ones too) ends at the same file
    chain = tmp_path / "chain.json"
    chain.symlink_to(os.path.relpath(link, tmp_path))
    atomic_write_bytes(chain, b"NEW\n")
    assert chain.is_symlink() and link.is_symlink() and target.read_bytes() == b"NEW\n"
    # a link whose target does not exist yet: the target is created, as a shell's '>' creates it
    dangling = links / "new.json"
    dangling.symlink_to(real / "new.json")
    atomic_write_bytes(dangling, b"made\n")
    assert dangling.is_symlink() and (real / "new.json").read_bytes() == b"made\n"
    # a plain path is replaced as before
    plain = links / "plain.json"
    atomic_write_bytes(plain, b"x")
    assert not plain.is_symlink() and plain.read_bytes() == b"x"


PASSAGES = [{"id": f"p{i}", "title": f"T{i}", "text": f"text number {i} about hamlet"} for i in range(4)]


@pytest.fixture
def tiny(tmp_path):
    corpus, topics = tmp_path / "passages.jsonl", tmp_path / "topics.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    topics.write_text(json.dumps({"id": "q1", "question": "hamlet", "answers": ["x"]}) + "\n", encoding="utf-8")
    return ["--corpus", str(corpus), "--bm25", "--topics", str(topics), "--hits", "2",
            "--cache-dir", str(tmp_path / "cache")]


def test_retrieve_outputs_through_links(tmp_path, tiny):
    from retrieval.cli import main

    real, out = tmp_path / "real", tmp_path / "out"
    real.mkdir()
    out.mkdir()
    pairs = {"link.trec": "run.trec", "link.ctxs.jsonl": "run.ctxs.jsonl", "link.trec.meta.json": "run.meta.json"}
    for name, target in pairs.items():
        (real / target).write_text("OLD\n")
        (out / name).symlink_to(real / target)
    assert main(["retrieve", *tiny, "--output", str(out / "link.trec"), "--output-ctxs", str(out / "link.ctxs.jsonl")]) == 0
    for name, target in pairs.items():
        assert (out / name).is_symlink(), name
    trec = (real / "run.trec").read_text().splitlines()
    assert len(trec) == 2 and trec[0].startswith("q1 Q0 p") and trec[0].split()[3] == "1"
    assert json.loads((real / "run.ctxs.jsonl").read_text())["qid"] == "q1"
    meta = json.loads((real / "run.meta.json").read_text())
    assert (meta["output"]["run"], meta["output"]["ctxs"]) == ("link.trec", "link.ctxs.jsonl")  # the paths as given
    assert _leftovers(real, out) == []


def test_a_metadata_link_to_the_run_itself_is_refused_before_the_search(tmp_path, tiny):
    from retrieval.cli import main

    run = tmp_path / "run.trec"
    run.write_text("OLD\n")
    (tmp_path / "run.trec.meta.json").symlink_to(run)
    with pytest.raises(ConfigError) as exc:
        main(["retrieve", *tiny, "--output", str(run)])
    assert str(exc.value) == (f"--output {run}: {run}.meta.json, where the run's metadata goes, is a link to the --output "
                              "file (the metadata would overwrite the run); remove the link or give another --output")
    assert run.read_text() == "OLD\n"


def test_check_write_baseline_through_a_link(monkeypatch, tmp_path):
    import leaderboards.check as C

    def runs(n: int) -> dict:
        samples = [{"doc_id": i, "metrics": ["em"], "em": float(i == 0)} for i in range(n)]
        cell = SimpleNamespace(task=SimpleNamespace(task="my_qa"), model_name=None, method=SimpleNamespace(name="tokrag"))
        return {"tokrag/my_qa/seed1": (cell, "key", {"samples": {"my_qa": samples}, "results": {"results": {"my_qa": {}}}})}

    spec = SimpleNamespace(name="mine", whole=None, selection=None, path="mine.yaml", runs_dir=None)
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setattr(C, "collect", lambda *a, **k: runs(4))
    C.write_baseline(spec, tmp_path, shared / "baseline.json")  # the shared baseline, a regular file
    link = tmp_path / "baseline.json"
    link.symlink_to(shared / "baseline.json")
    monkeypatch.setattr(C, "collect", lambda *a, **k: runs(6))
    C.write_baseline(spec, tmp_path, link)  # check --write --baseline link.json
    assert link.is_symlink()
    written = json.loads((shared / "baseline.json").read_text())
    assert written["spec"] == "mine" and written["n"] == {"tokrag/my_qa/seed1": 6}
    assert _leftovers(shared, tmp_path) == []
