"""``--check_integrity`` with a tokrag method is refused before the model load when lm-eval's own task tests are not
installed (s60 b1, breaker): lm-eval runs them (pytest on ``tests/test_version_stable.py`` of a source checkout)
after building the model, and a wheel install has no such folder, so ``lm_eval --model rag-standard ... --samples
'{"nq_oracle_bm25": [0]}' --check_integrity`` loaded the model and stopped with ``FileNotFoundError: Unable to find
package root`` (a traceback, exit 1, 24 s). Now ``tokrag_model._lmeval_hook.check_integrity_runnable``'s one line,
before the load, under the CLI and for ``lm_eval.simple_evaluate``."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import ConfigError
from tests.eval_helpers import stop_at_model_load

BASE = ["--model", "rag-standard", "--model_args", "pretrained=smollm2-135m-instruct", "--device", "cpu",
        "--apply_chat_template", "--tasks", "nq_oracle_bm25", "--limit", "1"]


@pytest.fixture
def no_tests(monkeypatch):
    """lm-eval installed without its tests folder (a wheel), whatever this machine has."""
    import lm_eval.evaluator_utils as utils

    def missing(start_path):
        raise FileNotFoundError(f"Unable to find package root within 3 upwardsof {start_path}")

    monkeypatch.setattr(utils, "find_test_root", missing)


def test_cli_refuses_before_the_load(monkeypatch, no_tests):
    from tokrag_model.eval_cli import main

    def refuse(*args, **kwargs):
        raise AssertionError("simple_evaluate was called: the model would have been built")

    stop_at_model_load(monkeypatch, refuse)
    with pytest.raises(ConfigError) as exc:
        main([*BASE, "--check_integrity"])
    msg = str(exc.value)
    import lm_eval.evaluator_utils as utils

    where = Path(utils.__file__).resolve().parent
    assert msg == ("--check_integrity: lm-eval runs its own task tests (tests/test_version_stable.py of a source "
                   "checkout of lm-evaluation-harness) after the model load, and this lm_eval install "
                   f"({where}) has none, so the run would stop there; drop --check_integrity, or install lm-eval "
                   "from a source checkout (pip install -e)"), msg


def test_simple_evaluate_refuses_before_the_load(monkeypatch, no_tests):
    import lm_eval
    import lm_eval.api.registry as registry

    import tokrag_model  # noqa: F401  (the start-up hook's patches)

    def no_build(name):
        raise AssertionError(f"get_model({name!r}) was called: the model would have been built")

    monkeypatch.setattr(registry, "get_model", no_build)
    with pytest.raises(ConfigError, match=r"^--check_integrity: lm-eval runs its own task tests"):
        lm_eval.simple_evaluate(model="rag-standard", model_args="pretrained=smollm2-135m-instruct,device=cpu",
                                tasks=["nq_oracle_bm25"], limit=1, check_integrity=True)


def test_passes_where_lm_eval_tests_are(monkeypatch, tmp_path):
    """With lm-eval's tests folder found (a source checkout) nothing is refused: lm-eval runs them as for hf."""
    import lm_eval.evaluator_utils as utils

    from tokrag_model._lmeval_hook import check_integrity_runnable

    monkeypatch.setattr(utils, "find_test_root", lambda start_path: tmp_path)
    assert check_integrity_runnable() is None
