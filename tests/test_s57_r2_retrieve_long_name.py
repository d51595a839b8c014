"""``tokrag retrieve``'s refusal of a name too long for the file system reads as its docstring says (s57 r2, review
of f2's 6a45c4a): ``a name of 256 bytes, more than the 255 its file system allows``; the line lacked the comma
(``a name of 256 bytes more than the 255``, read as 256 bytes beyond the limit), where the temporary-file case has
it. A folder of the path not yet created (its name over 255 bytes) and ``--output-ctxs``, refused before the search.
"""

from __future__ import annotations

import json

import pytest

PASSAGES = [{"id": f"p{i}", "title": f"T{i}", "text": f"Passage {i} about Hamlet, Paris and the Louvre."} for i in range(4)]
TOPICS = [{"id": "q1", "question": "who wrote hamlet", "answers": ["Shakespeare"]}]


@pytest.mark.parametrize("opt", ["--output", "--output-ctxs"])
def test_a_name_over_the_limit_is_said_so(tmp_path, capsys, opt):
    from tokrag_model.cli import main

    (tmp_path / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PASSAGES), encoding="utf-8")
    (tmp_path / "topics.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TOPICS), encoding="utf-8")
    long = tmp_path / "new" / ("b" * 256) / "run.jsonl"
    argv = ["retrieve", "--corpus", str(tmp_path / "passages.jsonl"), "--bm25", "--topics",
            str(tmp_path / "topics.jsonl"), "--hits", "2", "--cache-dir", str(tmp_path / "cache")]
    argv += ["--output", str(long)] if opt == "--output" else ["--output", str(tmp_path / "run.trec"), opt, str(long)]
    capsys.readouterr()
    assert main(argv) == 2
    assert capsys.readouterr().err == (f"tokrag retrieve: error: {opt} {long}: a name of 256 bytes, more than the 255 "
                                       "its file system allows ([Errno 36] File name too long); give a shorter path\n")
    assert not (tmp_path / "new").exists() and not (tmp_path / "cache").exists()
