"""s59 r5, review of f1's dbbf3c0 (lm-eval reads a task's local data file by its content): every lm-eval task download
without its own ``custom_dataset`` (lm-eval's hub tasks: each of mmlu's 57) read the whole hash memo file of
``$TOKRAG_CACHE_DIR`` (megabytes: ~0.1 s a task on a used cache) though it hashed no local data file; the memo is now
read at the first local data file only.
"""

from __future__ import annotations

import json

from leaderboard_helpers import FIX

from local_json_task import GOLD, _evaluate, _task, _write_rows, env  # noqa: F401  (env: a fixture)


class _Counting:
    """Counts the HashMemo objects made (each reads the whole memo file)."""

    def __init__(self, monkeypatch):
        import retrieval.io

        self.made = 0
        real = retrieval.io.HashMemo
        counter = self

        class HashMemo(real):
            def __init__(self, *args, **kwargs):
                counter.made += 1
                super().__init__(*args, **kwargs)

        monkeypatch.setattr(retrieval.io, "HashMemo", HashMemo)


def test_the_hash_memo_is_read_only_for_a_local_data_file(env, monkeypatch):
    from retrieval.io import HASH_MEMO_FILE, sha256_file
    from tokrag_model._local_data_files import content_keys, content_origin

    counting = _Counting(monkeypatch)
    with content_keys():  # hub, remote, archive and missing files: datasets' own identity, no memo read
        assert content_origin("hf://datasets/someone/qa@abc/test.jsonl") is None
        assert content_origin("https://example.org/q.jsonl") is None
        assert content_origin(str(env / "missing.jsonl")) is None
    assert counting.made == 0  # was 1: every download read the memo file
    assert not (env / "cache" / HASH_MEMO_FILE).exists()
    data = env / "q.jsonl"
    _write_rows(data, GOLD)
    with content_keys():
        assert content_origin(str(data)) == ("sha256=" + sha256_file(data),)
        assert content_origin(str(data)) == ("sha256=" + sha256_file(data),)
    assert counting.made == 1  # one memo for the download, saved at its end
    saved = json.loads((env / "cache" / HASH_MEMO_FILE).read_text(encoding="utf-8"))
    assert saved[str(data.resolve())][-1] == sha256_file(data)


def test_a_real_download_reads_the_memo_once_and_only_for_a_local_file(env, monkeypatch):
    from retrieval.io import HASH_MEMO_FILE, sha256_file

    data = env / "q.jsonl"
    _write_rows(data, GOLD)
    tasks = _task(env, "toy_json", str(data))
    counting = _Counting(monkeypatch)
    out = _evaluate(tasks, ["toy_json"])
    assert out["results"]["toy_json"]["em,none"] == 1.0
    assert counting.made == 1
    saved = json.loads((env / "cache" / HASH_MEMO_FILE).read_text(encoding="utf-8"))
    assert saved[str(data.resolve())][-1] == sha256_file(data)
    out = _evaluate(FIX / "tasks", ["toy_qa"])  # its own custom_dataset loader: no download hook, no memo read
    assert "em,none" in out["results"]["toy_qa"]
    assert counting.made == 1


def test_one_memo_read_for_the_downloads_of_a_process(env, monkeypatch):
    """Each download read the memo file again (a group of 20 local json tasks, warm: ~1 s, ~0.1 s without the memo);
    the process now keeps one memo per memo file (its entries are checked against each file's stamp when served)."""
    from retrieval.io import HASH_MEMO_FILE, sha256_file

    files = []
    for i, colours in enumerate([GOLD, ["tan", "gold"]]):
        files.append(env / f"q{i}.jsonl")
        _write_rows(files[-1], colours)
        _task(env, f"toy_json{i}", str(files[-1]))
    counting = _Counting(monkeypatch)
    out = _evaluate(env / "tasks", ["toy_json0", "toy_json1"])
    assert [out["results"][f"toy_json{i}"]["em,none"] for i in range(2)] == [1.0, 1.0]
    assert counting.made == 1  # was 2: one memo read per download
    saved = json.loads((env / "cache" / HASH_MEMO_FILE).read_text(encoding="utf-8"))
    assert [saved[str(f.resolve())][-1] for f in files] == [sha256_file(f) for f in files]
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(env / "other cache"))  # another memo file: read and saved there
    out = _evaluate(env / "tasks", ["toy_json1"])
    assert [s["target"] for s in out["samples"]["toy_json1"]] == ["tan", "gold"]
    assert counting.made == 2
    other = json.loads((env / "other cache" / HASH_MEMO_FILE).read_text(encoding="utf-8"))
    assert list(other) == [str(files[1].resolve())] and other[str(files[1].resolve())][-1] == sha256_file(files[1])
