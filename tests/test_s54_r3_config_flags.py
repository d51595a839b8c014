"""``lm_eval --config run.yaml`` whose YAML sets ``device: cuda`` (a machine without CUDA) or ``batch_size: 0`` for a
tokrag method (s54 r3, review of b3's ecf017a): the start-up hook's model-argument check merged lm-eval's
``--device``/``--batch_size``/``--max_batch_size`` from the command line only, so the model refused them at its build,
inside lm-eval's run: the one line, but exit 1 (/work/scratch/s54/r3/cli_cfg_cuda.old.log, cli_cfg_bs0.old.log),
while the same value given as a flag is refused before lm-eval builds anything, exit 2. A flag the command line does
not give is now the file's, as ``EvaluatorConfig.from_cli`` takes it (the command line's value wins)."""

from __future__ import annotations

import pytest
import torch

from retrieval.errors import ConfigError


def _execute(tmp_path, yaml_text, argv=()):
    import importlib

    importlib.import_module("tokrag_model._lmeval_hook")
    from lm_eval._cli import HarnessCLI

    config = tmp_path / "run.yaml"
    config.write_text("model: rag-standard\nmodel_args: pretrained=smollm2-135m-instruct\ntasks: [nq_oracle_gold]\n"
                      "limit: 1\n" + yaml_text)
    cli = HarnessCLI()
    args = cli._parser.parse_args(["run", "--config", str(config), *argv])
    ran = []
    args.func = ran.append  # the evaluation itself is not run
    return cli, args, ran


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.parametrize("yaml_text, line", [
    ("device: cuda\n", "--device cuda (or device=cuda in --model_args): torch.cuda.is_available() is False on this "
                       "machine (CPU build of torch?); use --device cpu"),
    ("device: cuda:1\n", "--device cuda:1 (or device=cuda:1 in --model_args): torch.cuda.is_available() is False on "
                         "this machine (CPU build of torch?); use --device cpu"),
    ("device: cuda:0\n", "--device cuda:0 (or device=cuda:0 in --model_args): torch.cuda.is_available() is False on "
                         "this machine (CPU build of torch?); use --device cpu, or leave --device out to run on CPU"),
    ("batch_size: 0\n", "--model rag-standard: model argument batch_size=0 is invalid: --batch_size (batch_size=) must "
                        "be a whole number >= 1, 'auto' or 'auto:N', got 0 (requests decoded together in one forward "
                        "pass ('auto' -> 1))"),
])
def test_the_config_files_device_and_batch_size_are_checked_before_lm_eval_builds_anything(tmp_path, no_cuda,
                                                                                           yaml_text, line):
    cli, args, ran = _execute(tmp_path, yaml_text)
    with pytest.raises(ConfigError) as err:
        cli.execute(args)
    assert str(err.value) == line and not ran
    assert getattr(err.value, "_tokrag_before_load", False)  # one line, exit 2 under lm_eval


def test_the_command_lines_flag_wins_over_the_config_file_and_cpu_passes(tmp_path, no_cuda):
    for yaml_text, argv in (("device: cuda\n", ["--device", "cpu"]), ("device: cpu\n", []), ("device: cuda:0\n", ["--device", "cpu"]),
                            ("batch_size: 0\n", ["--batch_size", "2"]), ("batch_size: auto\n", [])):
        cli, args, ran = _execute(tmp_path, yaml_text, argv)
        cli.execute(args)
        assert len(ran) == 1, (yaml_text, argv)
