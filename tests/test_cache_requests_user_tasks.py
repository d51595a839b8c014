"""``--cache_requests`` and tokrag tasks, found by a breaker:

* ``cache_requests: refresh`` in a ``--config`` YAML (what the refusal of ``--cache_requests true`` tells users to
  pass) reached lm-eval as a string and its run ended in ``AttributeError: 'str' object has no attribute 'get'``;
  the start-up hook now turns it into lm-eval's dict (refresh passes, true is refused);
* ``--cache_requests true`` (and ``--limit``, ``--gen_kwargs``, ``--output_path`` checks) were let through for
  tokrag tasks whose YAML lies outside tasks/: a user YAML that includes ours, a user group of ours.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tasks import TASK_DIR
from tests.eval_helpers import stop_at_model_load

BM25 = Path(TASK_DIR) / "qa" / "rag_qa_bm25.yaml"


class _ModelWouldLoad(Exception):
    pass


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise _ModelWouldLoad(kwargs.get("cache_requests"), kwargs.get("rewrite_requests_cache"),
                              kwargs.get("delete_requests_cache"))

    stop_at_model_load(monkeypatch, refuse)


def _data(folder: Path) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"q{i}", "question": f"who wrote book number {i}", "answers": [f"A{i}"]} for i in range(30)]
    (folder / "qA.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    passages = [{"id": f"d{i}", "title": f"T{i}", "text": f"book {i} was written by A{i}"} for i in range(3)]
    (folder / "passages.jsonl").write_text("".join(json.dumps(r) + "\n" for r in passages), encoding="utf-8")
    return {"questions": str(folder / "qA.jsonl"), "corpus": str(folder / "passages.jsonl"), "hits": 1}


def _config(tmp_path: Path, cache_requests: str) -> Path:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("model: rag-none\nmodel_args: {pretrained: smollm2-135m-instruct}\ntasks: [rag_qa_bm25]\n"
                   f"device: cpu\nlimit: 1\ncache_requests: {cache_requests}\n"
                   f"metadata: {json.dumps(_data(tmp_path / 'data'))}\n", encoding="utf-8")
    return cfg


def test_a_config_files_cache_requests_refresh_reaches_lm_eval_as_its_dict(no_model, tmp_path):
    from tokrag_model.eval_cli import main

    with pytest.raises(_ModelWouldLoad) as exc:
        main(["--config", str(_config(tmp_path, "refresh"))])
    assert exc.value.args == (True, True, False)
    with pytest.raises(_ModelWouldLoad) as exc:
        main(["--config", str(_config(tmp_path, "delete"))])
    assert exc.value.args == (False, False, True)
    with pytest.raises(_ModelWouldLoad) as exc:
        main(["--config", str(_config(tmp_path, "false"))])
    assert exc.value.args == (False, False, False)
    with pytest.raises(ConfigError) as err:  # true (a YAML bool) is refused as --cache_requests true is
        main(["--config", str(_config(tmp_path, "true"))])
    assert str(err.value).startswith("--cache_requests true: lm-eval keys its request cache by task name only")
    with pytest.raises(ConfigError) as err:
        main(["--config", str(_config(tmp_path, "sometimes"))])
    assert str(err.value) == ("cache_requests: 'sometimes': expected true, refresh or delete (lm-eval's "
                              "--cache_requests; in a --config file e.g. 'cache_requests: refresh'), or leave it out")


def test_cache_requests_dict():
    from tokrag_model._lmeval_hook import cache_requests_dict

    assert cache_requests_dict("Refresh") == {"cache_requests": True, "rewrite_requests_cache": True,
                                              "delete_requests_cache": False}
    assert cache_requests_dict(True)["cache_requests"] is True and cache_requests_dict(False) == {}
    assert cache_requests_dict({"cache_requests": True}) == {"cache_requests": True} and cache_requests_dict(None) is None
