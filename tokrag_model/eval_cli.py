"""``tokrag eval ...``: lm-eval's CLI with the tokrag models registered (same flags as ``lm_eval``).

Useful when the ``.pth`` start-up hook is not installed (e.g. running from a source checkout).
"""

from __future__ import annotations

import sys


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
    try:
        import yaml

        with open(known.config, encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
    except (OSError, ValueError, yaml.YAMLError):
        return None
    value = cfg.get("use_cache") if isinstance(cfg, dict) else None
    return str(value) if value else None


def main(argv: list[str] | None = None) -> int:
    """Run ``lm_eval`` with ``argv`` (e.g. ``--model tokrag --model_args ... --tasks ...``); returns the exit code
    (130 after Ctrl-C, with one line on stderr instead of lm-eval's traceback)."""
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
        cache = _use_cache(argv)
        if cache:
            print(f"tokrag eval: interrupted; the requests finished so far are kept in the --use_cache {cache} "
                  "files: rerun the same command to resume from them", file=sys.stderr)
        else:
            print("tokrag eval: interrupted; lm-eval writes results only when a run ends, so this one saved nothing. "
                  "To keep finished requests across a rerun, pass --use_cache PATH (the --log_samples traces are then "
                  "not recorded), or run cells with 'tokrag leaderboard run', which "
                  "resumes", file=sys.stderr)
        return 130
    finally:
        sys.argv = old
    return 0


if __name__ == "__main__":
    sys.exit(main())
