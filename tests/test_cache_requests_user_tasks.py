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


def _user_tasks(tmp_path: Path) -> tuple[Path, Path]:
    cr, grp = tmp_path / "cr", tmp_path / "grp2"
    cr.mkdir()
    grp.mkdir()
    (cr / "my_bm25.yaml").write_text(f"include: {BM25}\ntask: my_bm25\n", encoding="utf-8")
    (grp / "g2.yaml").write_text("group: my_bm25_group\ntask:\n  - rag_qa_bm25\naggregate_metric_list:\n"
                                 "  - metric: em\n    aggregation: mean\nmetadata:\n  version: 1.0\n", encoding="utf-8")
    return cr, grp


def _cli(tmp_path: Path, *extra: str) -> list[str]:
    return ["--model", "rag-none", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
            "--metadata", json.dumps(_data(tmp_path / "data")), *extra]


@pytest.mark.parametrize("folder,task", [("cr", "my_bm25"), ("grp2", "my_bm25_group")])
def test_cache_requests_true_is_refused_for_tokrag_tasks_outside_tasks(no_model, tmp_path, folder, task):
    from tokrag_model.eval_cli import main

    _user_tasks(tmp_path)
    args = _cli(tmp_path, "--include_path", str(tmp_path / folder), "--tasks", task)
    with pytest.raises(ConfigError) as exc:
        main([*args, "--cache_requests", "true"])
    assert str(exc.value).startswith("--cache_requests true: lm-eval keys its request cache by task name only")
    with pytest.raises(ConfigError) as exc:  # check_run_arguments decides "ours" the same way (not a tokrag model)
        main([*args, "--limit", "0", "--model", "hf"])
    assert str(exc.value).startswith("--limit 0: --limit must be > 0")
    with pytest.raises(_ModelWouldLoad):
        main([*args, "--cache_requests", "refresh"])


def test_selects_ours_reads_the_resolved_configs(tmp_path):
    from lm_eval.tasks import TaskManager

    from tasks import add_include_path
    from tasks.precheck import _selects_ours

    cr, grp = _user_tasks(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "plain.yaml").write_text("task: plain_task\ndataset_path: x\noutput_type: generate_until\n"
                                      "doc_to_text: q\ndoc_to_target: a\n", encoding="utf-8")
    (other / "g.yaml").write_text("group: plain_group\ntask:\n  - plain_task\n", encoding="utf-8")
    tm = TaskManager(include_path=add_include_path([str(cr), str(grp), str(other)]), include_defaults=False)
    assert _selects_ours(tm, ["my_bm25"]) is True and _selects_ours(tm, ["my_bm25_group"]) is True
    assert _selects_ours(tm, ["rag_qa_bm25"]) is True
    assert _selects_ours(tm, ["plain_task"]) is False and _selects_ours(tm, ["plain_group"]) is False
