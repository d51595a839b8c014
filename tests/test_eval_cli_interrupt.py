"""``tokrag eval`` after Ctrl-C: one line on stderr and exit code 130, where lm-eval's CLI printed a ~125-line
KeyboardInterrupt traceback through torch (found by a new-user trial). lm-eval writes results only at the end of a
run, so the line says nothing was saved and how to keep finished requests next time."""

from __future__ import annotations

import lm_eval.__main__

from tokrag_model import eval_cli


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(lm_eval.__main__, "cli_evaluate", interrupted)
    rc = eval_cli.main(["--model", "rag-standard", "--tasks", "nq_oracle_bm25", "--limit", "2"])
    err = capsys.readouterr().err
    assert rc == 130
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("tokrag eval: interrupted; lm-eval writes results only when a run ends, so this one saved "
                          "nothing. To keep finished requests across a rerun, pass --use_cache PATH")


def test_ctrl_c_with_use_cache_says_the_requests_are_kept(monkeypatch, capsys) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(lm_eval.__main__, "cli_evaluate", interrupted)
    for cache in (["--use_cache", "/tmp/c/run"], ["--use_cache=/tmp/c/run"], ["-c", "/tmp/c/run"], ["-c/tmp/c/run"]):
        assert eval_cli.main(["--model", "rag-standard", "--tasks", "nq_oracle_bm25", *cache]) == 130
        assert capsys.readouterr().err == ("tokrag eval: interrupted; the requests finished so far are kept in the "
                                           "--use_cache /tmp/c/run files: rerun the same command to resume from them\n")


def test_ctrl_c_while_registering_the_tasks_is_one_line_too(monkeypatch, capsys) -> None:
    import tokrag_model

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tokrag_model, "register_tasks", interrupted)
    assert eval_cli.main(["--model", "rag-standard", "--tasks", "nq_oracle_bm25"]) == 130
    assert capsys.readouterr().err.startswith("tokrag eval: interrupted; lm-eval writes results only when a run ends")


def test_ctrl_c_reads_use_cache_from_the_config_file(monkeypatch, capsys, tmp_path) -> None:
    """lm-eval takes ``use_cache`` from a ``--config``/``-C`` YAML file too (found by a review: the line said nothing
    was saved there, and so it did for ``-c PATH``); the command line's value wins, as in lm-eval."""
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(lm_eval.__main__, "cli_evaluate", interrupted)
    config = tmp_path / "run.yaml"
    config.write_text("model: rag-standard\nuse_cache: /tmp/c/from-yaml\n", encoding="utf-8")
    for argv, where in ((["--config", str(config)], "/tmp/c/from-yaml"), (["-C", str(config)], "/tmp/c/from-yaml"),
                        (["-C", str(config), "--use_cache", "/tmp/c/cli"], "/tmp/c/cli")):
        assert eval_cli.main(["--tasks", "nq_oracle_bm25", *argv]) == 130
        assert capsys.readouterr().err == (f"tokrag eval: interrupted; the requests finished so far are kept in the "
                                           f"--use_cache {where} files: rerun the same command to resume from them\n")
    config.write_text("model: rag-standard\ntasks: nq_oracle_bm25\n", encoding="utf-8")
    assert eval_cli.main(["-C", str(config)]) == 130
    assert "this one saved nothing" in capsys.readouterr().err
