"""The ``tokrag`` console script: one entry point, subcommands owned by each part of the package.

    tokrag index build ...        build a BM25 (Lucene) or dense (FAISS) index   -> retrieval.cli
    tokrag retrieve ...           write a TREC run + ctxs JSONL (cached)          -> retrieval.cli
    tokrag retrieve eval ...      answer recall@k, gold-passage@k, MRR            -> retrieval.cli
    tokrag eval ...               lm_eval with the tokrag models and tasks        -> tokrag_model.eval_cli
    tokrag analyze ...            token-level benefit/detriment experiment        -> tasks.analyze
    tokrag calibrate ...          Tok-RAG preset chosen on dev questions          -> tasks.calibrate
    tokrag leaderboard run|report|rescore|check SPEC                              -> leaderboards.cli

    tokrag --version              tokrag's version and the library versions a result records

Subcommand modules are imported only when used, so ``tokrag --help`` is instant.
"""

from __future__ import annotations

import importlib
import sys

_COMMANDS = {
    "index": ("retrieval.cli", "main", "build a BM25 (Lucene) or dense (FAISS) index of a corpus"),
    "retrieve": ("retrieval.cli", "main", "retrieve passages for a query set (cached TREC run); 'retrieve eval' scores a run"),
    "eval": ("tokrag_model.eval_cli", "main", "run lm_eval with the tokrag models and tasks registered"),
    "analyze": ("tasks.analyze", "main", "token-level benefit/detriment study (strict label, AUC with bootstrap CIs per policy)"),
    "calibrate": ("tasks.calibrate", "main", "per-model Tok-RAG preset (best fixed layer, dynamic-rule threshold) from dev questions"),
    "leaderboard": ("leaderboards.cli", "command", "run, report, rescore and check leaderboards from a YAML spec"),
}


def _usage() -> str:
    lines = ["usage: tokrag <command> [args...]", "", "commands:"]
    for name, (_, _, help_) in _COMMANDS.items():
        lines.append(f"  {name:<12} {help_}")
    lines.append("")
    lines.append("Run 'tokrag <command> --help' for the options of a command; 'tokrag --version' prints tokrag's version")
    lines.append("and those of the libraries a result records (lm_eval, torch, transformers, pyserini, ...).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Dispatch ``tokrag <command> ...`` to the owning module's ``main(argv)``; returns the exit code (2: a
    :class:`TokragError`, one line; 130: Ctrl-C, one line, from the command or, when it did not report it, from here).

    As the command (the console script: ``argv`` None), Ctrl-C ends the process by SIGINT after its line instead of
    exit status 130 (:func:`retrieval.errors.die_by`): bash stops a loop or script only when the child died of
    SIGINT. An in-process caller (an explicit ``argv``) gets 130."""
    rc = _dispatch(list(sys.argv[1:] if argv is None else argv))
    if argv is None:
        from retrieval.errors import command_status

        return command_status(rc)
    return rc


def _dispatch(argv: list[str]) -> int:
    """:func:`main` with the arguments given; returns the exit code. No arguments, ``-h``, ``--help``, ``help``: the
    commands, one line each (0); ``--version``: :func:`tokrag_model.eval_cli.version_text` (0); either into a pipe
    whose reader has closed it (``tokrag --version | head -1``): nothing more, no traceback, 1
    (:func:`tokrag_model.eval_cli.print_out`)."""
    from tokrag_model.eval_cli import print_out  # 1 when stdout's pipe is closed (tokrag --help | head -1)

    if not argv or argv[0] in {"-h", "--help", "help"}:
        return print_out(_usage())
    if argv[0] == "--version":
        from tokrag_model.eval_cli import version_text  # package metadata only: no torch or lm-eval import

        return print_out(version_text())
    name = argv[0]
    if name not in _COMMANDS:
        print(f"tokrag: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, func_name, _ = _COMMANDS[name]
    try:
        module = importlib.import_module(module_name)  # seconds for torch / lm_eval: Ctrl-C here was a traceback
    except KeyboardInterrupt:
        print(f"tokrag {name}: interrupted while starting; nothing was computed", file=sys.stderr)
        return 130
    # 'index' and 'retrieve' share one module: it receives its own command name first.
    sub_argv = argv if module_name == "retrieval.cli" else argv[1:]
    from retrieval.errors import TokragError, print_no_room

    try:
        rc = getattr(module, func_name)(sub_argv)
    except TokragError as exc:
        print(f"tokrag {name}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # commands say what they kept themselves (130); this is the fallback, not a traceback
        print(f"tokrag {name}: interrupted; run the same command again", file=sys.stderr)
        return 130
    except Exception as exc:  # a failed write (a full disk, read-only, EIO, ...; wrapped or not): one line (retrieval.errors)
        if not print_no_room(exc, f"tokrag {name}"):
            raise
        return 2
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
