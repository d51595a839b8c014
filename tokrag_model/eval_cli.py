"""``tokrag eval ...``: lm-eval's CLI with the tokrag models registered (same flags as ``lm_eval``).

Useful when the ``.pth`` start-up hook is not installed (e.g. running from a source checkout).
"""

from __future__ import annotations

import sys


def config_value(config: str | None, name: str) -> str | None:
    """The value of ``name`` in lm-eval's ``--config`` / ``-C`` YAML file ``config`` as a string; None when there is
    no file, it cannot be read or parsed, or it does not set ``name``."""
    if not config:
        return None
    try:
        import yaml

        with open(config, encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
    except (OSError, ValueError, yaml.YAMLError):
        return None
    value = cfg.get(name) if isinstance(cfg, dict) else None
    return str(value) if value else None


def _use_cache(argv: list[str]) -> str | None:
    """lm-eval's ``--use_cache`` / ``-c`` (a sqlite cache path prefix) as its parser reads it, else ``use_cache`` in
    the ``--config`` / ``-C`` YAML file (the command line wins, as in lm-eval); None when neither sets it."""
    import argparse

    flag = argparse.ArgumentParser(add_help=False)
    flag.add_argument("--use_cache", "-c")
    flag.add_argument("--config", "-C")
    known = flag.parse_known_args(argv)[0]
    if known.use_cache or not known.config:
        return known.use_cache
    return config_value(known.config, "use_cache")


def interrupted_line(use_cache: str | None, program: str = "tokrag eval") -> str:
    """The one line (no newline) printed after Ctrl-C of an lm-eval run of a tokrag model, by ``tokrag eval``
    (:func:`main`) and by plain ``lm_eval`` (``program``: the start-up hook, ``tokrag_model._lmeval_hook``):
    with ``use_cache`` (lm-eval's ``--use_cache`` path prefix) that the finished requests are kept there and a rerun
    of the same command resumes; without it that nothing was saved and how to keep finished requests next time."""
    if use_cache:
        return (f"{program}: interrupted; the requests finished so far are kept in the --use_cache {use_cache} "
                "files: rerun the same command to resume from them")
    return (f"{program}: interrupted; lm-eval writes results only when a run ends, so this one saved nothing. "
            "To keep finished requests across a rerun, pass --use_cache PATH (the --log_samples traces are then "
            "not recorded), or run cells with 'tokrag leaderboard run', which resumes")


def close_progress_bars() -> None:
    """Close the tqdm progress bars still open (after Ctrl-C), each written out as a finished bar (its last state
    and a newline), so that the :func:`interrupted_line` printed next starts a line of its own instead of following
    the bar's text (and the bars are not drawn again below it at exit). Never raises."""
    module = sys.modules.get("tqdm.std")
    for bar in list(getattr(getattr(module, "tqdm", None), "_instances", None) or ()):
        try:
            bar.close()
        except Exception:  # noqa: BLE001 - a bar that cannot be closed stays as it is
            pass


def main(argv: list[str] | None = None) -> int:
    """Run ``lm_eval`` with ``argv`` (e.g. ``--model tokrag --model_args ... --tasks ...``); returns the exit code
    (130 after Ctrl-C, with one line on stderr instead of lm-eval's traceback; the commands ``tokrag eval`` and
    ``python -m tokrag_model.eval_cli`` then die by SIGINT: :func:`retrieval.errors.die_by`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    old = sys.argv
    try:
        import tokrag_model
        import tokrag_model._lmeval_hook  # noqa: F401  (one-line errors for unknown --tasks / --model names)

        tokrag_model.register()
        tokrag_model.register_tasks()
        from lm_eval.__main__ import cli_evaluate

        sys.argv = ["lm_eval", *argv]
        cli_evaluate()
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except KeyboardInterrupt:  # lm-eval's own: a 100-line traceback through torch
        close_progress_bars()
        print(interrupted_line(_use_cache(argv)), file=sys.stderr)
        return 130
    finally:
        sys.argv = old
    return 0


if __name__ == "__main__":
    from retrieval.errors import command_status

    sys.exit(command_status(main()))
