"""An index folder rebuilt in place (``tokrag index build --force`` from another shell) while a process that
searched it lives on: that process searches the new build, and the run cache never gets a run of the old one.

Before the fix the BM25 searcher was cached by (folder, k1, b) only, so the long-lived process kept the old
Lucene reader, returned corpus A's ranking with corpus B's texts, and cached it under B's run key for every
later process (``index`` is a runtime parameter, not in the run key).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from retrieval import load_corpus, retrieve
from retrieval.bm25 import build_bm25_index, index_identity

REPO = Path(__file__).resolve().parents[1]
ROWS_A = [("d1", "apple orchard harvest"), ("d2", "banana plantation"), ("d3", "cherry tree")]
ROWS_B = [("d1", "banana plantation"), ("d2", "apple orchard harvest"), ("d3", "cherry tree")]  # same ids, texts swapped


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps({"id": i, "title": "", "text": t}) + "\n" for i, t in rows), encoding="utf-8")
    return path


def test_rebuilt_index_folder_is_searched_anew_and_cached_right(tmp_path):
    a = load_corpus(_write(tmp_path / "A.jsonl", ROWS_A))
    b_path = _write(tmp_path / "B.jsonl", ROWS_B)
    b = load_corpus(b_path)
    idx, cache = tmp_path / "idx", tmp_path / "cache"
    q = {"q": "apple orchard"}
    build_bm25_index(a, idx)  # starts the JVM here: retrieve then searches in this process, as the worker does
    before = index_identity(idx)
    run = retrieve(a, q, "bm25", k=1, params={"index": str(idx)}, cache_dir=cache)
    assert [(h["docid"], h["text"]) for h in run.ctxs["q"]] == [("d1", "apple orchard harvest")]

    env = {**os.environ, "TOKRAG_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-m", "retrieval.cli", "index", "build", "--corpus", str(b_path),
                           "--index", str(idx), "--force"], capture_output=True, text=True, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert index_identity(idx) != before and index_identity(idx)[0] == b.fingerprint

    run = retrieve(b, q, "bm25", k=1, params={"index": str(idx)}, cache_dir=cache)
    assert run.searches == 1
    assert [(h["docid"], h["text"]) for h in run.ctxs["q"]] == [("d2", "apple orchard harvest")]

    # a fresh process (no JVM) is served B's run from the cache: the right passage
    code = textwrap.dedent(f"""
        import json
        from retrieval import load_corpus, retrieve
        run = retrieve(load_corpus({str(b_path)!r}), {{"q": "apple orchard"}}, "bm25", k=1,
                       params={{"index": {str(idx)!r}}}, cache_dir={str(cache)!r})
        print(json.dumps([run.searches, [[h["docid"], h["text"]] for h in run.ctxs["q"]]]))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [0, [["d2", "apple orchard harvest"]]]
