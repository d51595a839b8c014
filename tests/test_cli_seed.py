"""lm-eval's ``--seed`` outside the range of the generator it seeds (``--seed -5``: NumPy's ``np.random.seed`` takes
[0, 2**32 - 1]) is refused in one line by ``tasks.precheck.check_run_arguments`` (run by the start-up hook right after
lm-eval resolves ``--tasks``, before the model load) instead of a 20-line NumPy traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import ConfigError

TASK_DIR = Path(__file__).resolve().parents[1] / "tasks"


@pytest.fixture(scope="module")
def manager():
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASK_DIR), include_defaults=False)


@pytest.mark.parametrize("seed, shown, name", [
    ([-5, -5, -5, -5], "-5", "numpy"),                # --seed -5 (lm-eval repeats one value four times)
    (-5, "-5", "numpy"),                              # a scalar (a YAML config's seed)
    ([0, 2**32, 0, 0], "0,4294967296,0,0", "numpy"),
    ([0, 1, 2**64, None], "0,1,18446744073709551616,None", "torch"),
])
def test_a_seed_out_of_its_generators_range_is_refused(manager, seed, shown, name):
    from tasks.precheck import check_run_arguments

    with pytest.raises(ConfigError) as err:
        check_run_arguments(manager, ["nq_oracle_bm25"], model="rag-standard", seed=seed)
    msg = str(err.value)
    assert msg.startswith(f"--seed {shown}: the {name} seed") and "\n" not in msg


@pytest.mark.parametrize("seed", [None, [0, 1234, 1234, 1234], [-5, 0, -5, -5], [1, None, None, 7], 2**32 - 1])
def test_seeds_the_generators_take_pass(manager, seed):
    """Python's ``random`` (and the few-shot sampler) take any integer; None leaves a generator unseeded."""
    from tasks.precheck import check_run_arguments

    check_run_arguments(manager, ["nq_oracle_bm25"], model="rag-standard", seed=seed)
