"""A hub id with a space copied around it (s57 r5, review of b1's c5bd462).

c5bd462 made a ``questions`` value holding whitespace a file name ("no such file"), naming the file that exists without
the spaces. A hub id with a space copied after it (``"akariasai/PopQA "``) got "no such file" and nothing else, as if
a file had been meant; now the line says that without the spaces it is read as a hub id. A missing file name with
spaces is unchanged (no such file, nothing more).
"""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tasks.byo import load_questions


@pytest.mark.parametrize("spec", ["akariasai/PopQA ", "\tmy-org/my_qa"])
def test_hub_id_with_spaces_is_named_as_a_hub_id(tmp_path, monkeypatch, spec):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as exc:
        load_questions(spec)
    bare = spec.strip()
    assert str(exc.value) == (f"questions {spec!r}: no such file (relative to the working directory {tmp_path}); "
                              f"without the spaces around it, {bare!r} is read as a hub id: remove them (give a JSONL "
                              "file with question and answers per line, or a hub id)")


def test_missing_file_with_spaces_unchanged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as exc:
        load_questions("nope.csv ")
    assert str(exc.value) == (f"questions 'nope.csv ': no such file (relative to the working directory {tmp_path}) "
                              "(give a JSONL file with question and answers per line, or a hub id)")
