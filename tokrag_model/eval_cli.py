"""``tokrag eval ...``: lm-eval's CLI with the tokrag models registered (same flags as ``lm_eval``).

Useful when the ``.pth`` start-up hook is not installed (e.g. running from a source checkout). Besides lm-eval's CLI:
``tokrag eval --help`` (or no arguments) leads lm-eval's ``run`` options with what tokrag adds (:func:`help_text`),
``tokrag eval --version`` prints the versions a result records (:func:`version_text`), and a run without ``--tasks``
is one error line (:func:`check_tasks_given`).
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


LMEVAL_COMMANDS: tuple[str, ...] = ("run", "ls", "validate")
"""lm-eval 0.4.13's subcommands; arguments that start with none of them are ``run``'s (lm-eval inserts it)."""


def help_text() -> str:
    """The paragraph ``tokrag eval --help`` prints before lm-eval's ``run`` options: what ``tokrag eval`` adds to
    ``lm_eval``, its model names (:data:`tokrag_model.methods.METHODS`), the offline ``pretrained`` aliases
    (:data:`tokrag_model.loading.ALIASES`), where the task table, the checks and the results are described."""
    import textwrap

    from .loading import ALIASES
    from .methods import METHODS

    def item(text: str) -> str:  # the registry's lists grow: wrapped under their column
        return textwrap.fill(text, width=115, initial_indent="  ", subsequent_indent=" " * 17,
                             break_on_hyphens=False, break_long_words=False)

    return "\n".join([
        "tokrag eval: lm_eval with tokrag's models and tasks registered; it takes lm_eval run's options (below).",
        item(f"--model        tokrag's methods: {', '.join(METHODS)} (lm-eval's own, e.g. hf, work too)"),
        item(f"--model_args   pretrained=: an offline alias ({', '.join(ALIASES)}), a hub id or a local folder"),
        "  --tasks        required: tokrag's tasks are tabled in tasks/README.md (e.g. wiki_lm_bm25, nq_oracle_bm25);",
        "                 'tokrag eval ls tasks' lists every task lm-eval knows",
        "  your own data  --tasks rag_qa_bm25 (or rag_qa_dense, rag_qa_hybrid) --metadata '{\"questions\": \"q.jsonl\",",
        "                 \"corpus\": \"passages.jsonl\"}' (README.md, 'Your own questions and corpus')",
        "  checks         a tokrag model's or task's arguments (--output_path, --use_cache, --limit, --num_fewshot,",
        "                 --gen_kwargs, --apply_chat_template, the tasks' data) are checked before the model loads:",
        "                 one 'error:' line, exit status 2",
        "  results        --output_path DIR: lm-eval's results JSON (config.tokrag_versions: the versions of",
        "                 'tokrag eval --version') and, with --log_samples, samples_<task>_<date>.jsonl, under",
        "                 DIR/<pretrained>/; Ctrl-C with --use_cache PATH keeps the finished requests for a rerun",
        "  more           README.md, 'Running evaluations'",
        "",
        "lm-eval's options ('tokrag eval' runs 'lm_eval run'; also 'tokrag eval ls ...', 'tokrag eval validate ...'):",
        "",
    ])


def version_text() -> str:
    """``tokrag --version`` / ``tokrag eval --version``: tokrag's installed version and source commit
    (:func:`tokrag_model.provenance.tokrag_source`), then one ``name version`` line per library a result records in
    ``config.tokrag_versions`` (lm_eval, then :func:`leaderboards.keys.library_versions`: torch, transformers,
    tokenizers, pyserini, the Anserini jar, then the others in name order: datasets, the FAISS distribution, jinja2,
    numpy, rouge, rouge-score, scikit-learn, scipy), read from package metadata without importing them (no torch, numpy or scipy
    import: about 0.1 s); ``not installed`` where one is not. Raises nothing."""
    from leaderboards.keys import _lm_eval_version, library_versions

    from .provenance import tokrag_source

    source = tokrag_source()
    try:
        lm_eval_version: str | None = _lm_eval_version()
    except Exception:  # noqa: BLE001 - PackageNotFoundError: not installed
        lm_eval_version = None
    libraries = library_versions()
    order = ["torch", "transformers", "tokenizers", "pyserini", "anserini"]
    versions = {"lm_eval": lm_eval_version, **{name: libraries.get(name) for name in order},
                **{k: v for k, v in libraries.items() if k not in order}}
    head = f"tokrag {source['version'] or 'not installed'}" + (f" (commit {source['commit']})" if source["commit"] else "")
    return "\n".join([head, *(f"{name} {value or 'not installed'}" for name, value in versions.items())])


def print_out(text: str) -> int:
    """Print ``text`` and a newline on stdout, flushed: the help and version printing of ``tokrag --help``,
    ``tokrag --version``, ``tokrag eval --help`` / ``--version`` and ``python -m tokrag_model.eval_cli``. Returns 0,
    or 1 when stdout is a pipe whose reader has closed it (``tokrag --version | head -1``), which ended in a
    ``BrokenPipeError`` traceback: nothing is printed then, stdout is pointed at the null device
    (:func:`_discard_stdout`), so that the interpreter's flush at exit raises nothing, and the exit status is 1, as
    Python's note on SIGPIPE recommends (the ``signal`` module's documentation: SIGPIPE keeps Python's handling; it
    is not set to ``SIG_DFL``, which would kill any command whose socket or pipe closes)."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        _discard_stdout()
        return 1
    return 0


def _discard_stdout() -> None:
    """After a ``BrokenPipeError`` on stdout: point file descriptor 1 at ``os.devnull`` (opened for writing, as a
    shell's ``> /dev/null`` does), so that what stays in stdout's buffer is dropped when Python flushes it at exit
    instead of raising the error again (``Exception ignored ... BrokenPipeError``, exit status 120)."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def _flush_stdout() -> bool:
    """Flush stdout after lm-eval printed its help (argparse ignores an OSError of the write); True, with stdout
    discarded (:func:`_discard_stdout`), when its pipe's reader has closed it."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _discard_stdout()
        return True
    return False


def check_tasks_given(argv: list[str]) -> None:
    """Refuse a ``run`` (``argv``: lm-eval's arguments after ``run``) that names no task: neither ``--tasks`` / ``-t``
    (as lm-eval's parser reads it; empty names, e.g. ``--tasks ""``, count as none) nor ``tasks`` in the
    ``--config`` / ``-C`` YAML file (:func:`config_value`). lm-eval ended it with a ``ValueError: No tasks
    specified`` traceback, and a ``--config`` path that is not a file with a ``FileNotFoundError`` one.

    Raises:
        ConfigError: one line naming ``--tasks`` (where tokrag's tasks are listed and how to list lm-eval's), or the
            ``--config`` path that is not a file.
    """
    import argparse
    import os

    from retrieval.errors import ConfigError

    flag = argparse.ArgumentParser(add_help=False)
    flag.add_argument("--tasks", "-t", nargs="*", action="extend")
    flag.add_argument("--config", "-C")
    known = flag.parse_known_args(argv)[0]
    if known.config is not None and not os.path.isfile(known.config):
        raise ConfigError(f"--config {known.config}: not a file; give the path of a YAML file of lm_eval run's options")
    if any(name.strip() for value in known.tasks or () for name in value.split(",")):
        return
    if known.config and config_value(known.config, "tasks"):
        return
    where = f" (nor 'tasks:' in the --config file {known.config})" if known.config else ""
    raise ConfigError(f"--tasks: no task given{where}; name one or more, e.g. --tasks wiki_lm_bm25 (tokrag's tasks: "
                      "the table in tasks/README.md; 'tokrag eval ls tasks' lists every task lm-eval knows)")


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
    ``python -m tokrag_model.eval_cli`` then die by SIGINT: :func:`retrieval.errors.die_by`).

    Arguments that do not start with an lm-eval subcommand (:data:`LMEVAL_COMMANDS`) are ``run``'s. No arguments,
    ``-h`` / ``--help`` of ``run``: :func:`help_text`, then lm-eval's ``run`` options (0). ``--version``:
    :func:`version_text` (0). Raises ConfigError (``tokrag eval`` prints it as one line, exit status 2) for a run
    without tasks (:func:`check_tasks_given`), before lm-eval is imported, and for the run arguments that the start-up
    hook checks before the model load."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:
        return print_out(version_text())
    if not argv or argv[0] not in LMEVAL_COMMANDS:
        argv = ["run", *argv]  # as lm-eval does for two arguments or more; one (--tasks=X) was an 'unrecognized' error
    helping = argv[0] == "run" and (len(argv) == 1 or bool({"-h", "--help"} & set(argv[1:])))
    if helping:
        if print_out(help_text()):  # then lm-eval's 'run' options: its own top-level help lists only its subcommands
            return 1  # stdout's reader is gone (tokrag eval --help | head -1): nothing more to print
        argv = ["run", "--help"] if len(argv) == 1 else argv
    elif argv[0] == "run":
        check_tasks_given(argv[1:])
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
        if helping and _flush_stdout():  # argparse drops a failed write of the help: it would fail again at exit
            return 1
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except KeyboardInterrupt:  # lm-eval's own: a 100-line traceback through torch
        close_progress_bars()
        print(interrupted_line(_use_cache(argv)), file=sys.stderr)
        return 130
    finally:
        sys.argv = old
    return 0


if __name__ == "__main__":
    from retrieval.errors import TokragError, command_status

    try:
        status = main()
    except TokragError as exc:  # raised before lm-eval runs (check_tasks_given): one line, as the hook's (exit 2)
        print(f"python -m tokrag_model.eval_cli: error: {exc}", file=sys.stderr)
        status = 2
    sys.exit(command_status(status))
