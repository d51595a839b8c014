"""Two messages whose advice or count did not hold (s50 u1 L5, s50 b2 N1; fast: toy model, no real weights).

1. A spec whose task names its data by a relative path (``questions: data/q.jsonl``), checked or reported from
   another directory: the cells are rightly said to be missing the file, but the commands suggested after them
   (``run: tokrag leaderboard run SPEC --runs-dir RUNS``, ``report ... --allow-missing``, check's ``run the cell
   with ...``) failed the same way from there. Now they start with ``cd DIR &&``, DIR the directory the data are
   found from (where the finished run read them, else the spec's folder), and work pasted anywhere; the per-cell fix
   names DIR instead of "the directory that holds 'data/q.jsonl'".
2. The journal's checksum WARNING said ``(3 chunk(s), 6 request(s); 1 of them unverified)``: "them" read as the
   requests, the 1 counted lines. It now says on how many of the dropped lines the checksum is wrong or missing.
"""

from __future__ import annotations

from leaderboards.runner import _entry_checksum, _unverified_message


def _lines(sizes: list[int], bad: set[int]) -> list[dict]:
    """Journal chunk lines of ``sizes`` requests each, the ``bad`` ones (0-based) with a wrong checksum."""
    out = []
    for i, n in enumerate(sizes):
        e = {"type": "generate_until", "fingerprints": [f"fp{i}-{j}" for j in range(n)]}
        e["sha256"] = "0" * 64 if i in bad else _entry_checksum(e)
        out.append(e)
    return out


def test_the_journal_warning_counts_lines_as_lines():
    entries = _lines([4, 2, 3, 1], {1})
    assert _unverified_message(entries, 1) == (
        "the journal's line 3 fails its checksum (edited or damaged after it was written): it and the 2 line(s) "
        "after it (3 chunk(s), 6 request(s); checksum wrong or missing on 1 of these 3 lines) are dropped and "
        "computed again")
    entries = _lines([2, 2, 5], {0, 2})
    del entries[0]["sha256"]
    assert _unverified_message(entries, 0) == (
        "the journal's line 2 has no checksum (written by an older runner: not verified): it and the 2 line(s) "
        "after it (3 chunk(s), 9 request(s); checksum wrong or missing on 2 of these 3 lines) are dropped and "
        "computed again")
    assert _unverified_message(_lines([4, 3], {1}), 1) == (
        "the journal's line 3 fails its checksum (edited or damaged after it was written): it (1 chunk(s), "
        "3 request(s)) is dropped and computed again")
