"""Helpers of the retrieval tests: JSONL files, a ctxs run as ``tokrag retrieve`` writes it, ``retrieve eval --json``."""

from __future__ import annotations

import json

PASSAGES = [{"id": "p1", "title": "Hamlet", "text": "Hamlet is a tragedy by William Shakespeare."},
            {"id": "p2", "title": "Paris", "text": "Paris is the capital of France."}]
"""Two passages: a run's i-th question ranks passage i (:func:`ctxs_run`)."""


def write_jsonl(path, rows):
    """Write ``rows`` to ``path``, one line each: a dict as its JSON, a string as it is (a malformed line); -> path."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def ctxs_run(path, qids, texts, field="query"):
    """A ctxs JSONL as tokrag retrieve writes it at ``path``: the i-th question (id ``qids[i]``, its text ``texts[i]``
    under ``field``, the text it was retrieved for) ranked :data:`PASSAGES`\\ [i]; -> path."""
    return write_jsonl(path, [{"qid": q, field: t, "ctxs": [dict(PASSAGES[i], docid=PASSAGES[i]["id"], score=1.0, rank=1)]}
                              for i, (q, t) in enumerate(zip(qids, texts))])


def eval_json(capsys, *args):
    """``tokrag retrieve eval ARGS --k 1 --json``'s printed result (a dict)."""
    from retrieval.cli import main

    main(["retrieve", "eval", *args, "--k", "1", "--json"])
    return json.loads(capsys.readouterr().out)
