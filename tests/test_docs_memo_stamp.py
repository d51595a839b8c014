"""The READMEs and the provenance docstring state the stamp file hashes are memoised by now.

They said "by path, size and mtime", the rule eaa17de fixed (a same-size edit with its mtime put back kept its old
hash); the stamp is path, size, mtime, ctime and inode (``retrieval.io.file_stamp``).
"""

from __future__ import annotations

from pathlib import Path

import tasks.provenance

REPO = Path(__file__).resolve().parents[1]


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_docs_state_the_memo_stamp():
    docs = {
        "README.md": _flat((REPO / "README.md").read_text(encoding="utf-8")),
        "leaderboards/README.md": _flat((REPO / "leaderboards" / "README.md").read_text(encoding="utf-8")),
        "tasks/provenance.py": _flat(tasks.provenance.__doc__ + tasks.provenance.path_record.__doc__),
    }
    for name, doc in docs.items():
        assert "path, size and mtime" not in doc, name
    assert "File hashes are memoised in `$TOKRAG_CACHE_DIR` by path, size, mtime, ctime and inode" in docs["README.md"]
    assert "memoised by path, size, mtime, ctime and inode (`retrieval.io.file_stamp`" in docs["leaderboards/README.md"]
    assert "by path, size, mtime, ctime and inode: :func:`retrieval.io.file_stamp`" in docs["tasks/provenance.py"]
    assert "hashed once per path, size, mtime, ctime and inode" in docs["tasks/provenance.py"]
