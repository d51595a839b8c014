"""tasks/README.md says where ``tokrag analyze`` / ``tokrag calibrate`` are documented that their ``--data`` takes only
the built-in ``wiki`` and ``nq`` sets (a bring-your-own questions file is refused), with what a BYO user can do
instead; it did not, and a user passed ``--data q.jsonl``. The refusal it quotes is the one the commands give."""

from __future__ import annotations

import re

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tasks.analyze import DATA_SETS, parse_data


def _section() -> str:
    text = (TASK_DIR / "README.md").read_text(encoding="utf-8")
    start = text.index("## Token-level benefit/detriment study and calibration")
    end = text.find("\n## ", start + 1)
    return " ".join(text[start:end if end > 0 else len(text)].split())


def test_the_readme_says_analyze_and_calibrate_read_no_byo_questions():
    doc = _section()
    assert "**Bring-your-own questions are not read by `analyze` or `calibrate`.**" in doc
    assert DATA_SETS == ("wiki", "nq") and "two built-in sets `wiki` and `nq` only" in doc
    quoted = re.search(r"\(`(--data 'q\.jsonl': [^`]*)`\)", doc).group(1)
    with pytest.raises(ConfigError) as exc:
        parse_data("q.jsonl", 5)
    assert str(exc.value) == quoted == "--data 'q.jsonl': use a comma list of wiki, nq"
    # what to do instead: the preset on any task, or choosing the layer on the user's own dev questions
    assert "`preset=PATH` applies to any task, `rag_qa_bm25` included" in doc
    assert '"split": "dev"}\'`' in doc and "`--model_args ...,layer=L`" in doc
