"""The conversion command named for a JSON-array file (``retrieval.io.jsonl_conversion_command``: bring-your-own
questions, a DPR run read by ``tokrag retrieve eval``; s55 r6, r4's report) pipes a gzip file through ``gunzip -c`` and
never names an output that exists, as the corpus and topics readers' command does since b12fe1f (one helper now).

It said ``jq -c '.[]' q.json.gz > q.jsonl``: jq reads no gzip (a parse error), and the shell empties ``q.jsonl``
(often the file the ``.gz`` was made from) before jq runs.
"""

from __future__ import annotations

import gzip
import json
from shlex import quote as q

import pytest

from retrieval.errors import DataError
from retrieval.io import jsonl_conversion_command

ROWS = [{"question": "who wrote hamlet", "answers": ["Shakespeare"]}]


def test_byo_questions_in_a_gzip_json_array_beside_their_jsonl(tmp_path):
    from tasks.byo import load_questions

    folder = tmp_path / "my data"
    folder.mkdir()
    (folder / "q.jsonl").write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")  # the file the .gz was made from
    gz = folder / "q.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(ROWS, indent=2).encode("utf-8")))
    with pytest.raises(DataError) as exc:
        load_questions(str(gz))
    assert str(exc.value) == (f"questions {gz}: one JSON array, not JSON Lines; write one {{question, answers}} object "
                              f"per line (gunzip -c {q(str(gz))} | jq -c '.[]' > {q(str(folder / 'q.lines.jsonl'))})")
    assert q(str(gz)).startswith("'")  # the space quoted


def test_the_command_for_each_kind_of_file(tmp_path):
    plain = tmp_path / "dpr.json"
    plain.write_text(json.dumps(ROWS), encoding="utf-8")
    assert jsonl_conversion_command(plain) == f"jq -c '.[]' {q(str(plain))} > {q(str(tmp_path / 'dpr.jsonl'))}"  # as before
    (tmp_path / "dpr.jsonl").write_text("{}\n", encoding="utf-8")
    assert jsonl_conversion_command(plain) == f"jq -c '.[]' {q(str(plain))} > {q(str(tmp_path / 'dpr.lines.jsonl'))}"
    named = tmp_path / "run.jsonl"  # gzip by content, not by name (open_data reads it so)
    named.write_bytes(gzip.compress(json.dumps(ROWS).encode("utf-8")))
    assert jsonl_conversion_command(named) == f"gunzip -c {q(str(named))} | jq -c '.[]' > {q(str(tmp_path / 'run.lines.jsonl'))}"
    assert jsonl_conversion_command(named, array=False) == (f"gunzip -c {q(str(named))} | jq -c . > "
                                                            f"{q(str(tmp_path / 'run.lines.jsonl'))}")
    gone = tmp_path / "gone.json.gz"  # unreadable now: told by its name
    assert jsonl_conversion_command(gone) == f"gunzip -c {q(str(gone))} | jq -c '.[]' > {q(str(tmp_path / 'gone.jsonl'))}"
