"""The base of every method: :class:`RAGMethodLM` (an lm-eval ``LM``), the shared single-branch rule and
teacher-forced scoring of one branch.

A method (one module in :mod:`tokrag_model.methods`) subclasses :class:`RAGMethodLM` and only says how a
request becomes branches (``make_rule``) and how the continuation of a ``loglikelihood`` request is
scored (``score_plan``: the branch prompts to teacher-force and what to do with their log-probs);
everything else — model loading (:class:`Backbone`), model arguments, prompts and the token budget
(:mod:`tokrag_model.prompt`), batching, lm-eval's three request types, traces, stats — lives here. The
base model, prompt, passages, truncation and generation budget are identical for all methods.

Batching (``--batch_size``) is done here, once for every method, with lm-eval's ``Collator`` as its ``hf``
model does: requests are grouped (``generate_until``: by generation kwargs), sorted by prompt length
(longest first, so a batch pads little and memory errors come first), cut into batches of
``batch_size`` requests, and the results are returned in the original order. A generation batch is one
:func:`tokrag_model.decoder.generate` call over all branches of its requests; a scoring batch is one
:meth:`tokrag_model.decoder.MultiContextDecoder.teacher_force` call over all branches of its plans.
With ``batch_invariant`` (default on CPU with float32 weights) every number, output and trace is the same at every
batch size (:mod:`tokrag_model.decoder`).

Traces (``trace=true``, the default): each request's decisions are appended to ``Instance.arguments``
as one extra element ``{"tokrag_trace": {...}}``; lm-eval 0.4.13 writes the arguments of every request
into the ``--log_samples`` JSONL (``arguments.gen_args_<i>.arg_<n>``), so the decisions travel with the
sample. They are not attached when lm-eval's ``--use_cache`` is on (the response cache keys on the
arguments).

``--use_cache``: lm-eval's response cache (``CachingLM``) keyed a response by the request's arguments alone (context,
generation kwargs), and a tokrag context holds only the passages slot, not the passages; its keys are now
:meth:`RAGMethodLM.response_cache_args` (the arguments, the model's identity, tokrag's answer code and the doc's digest:
:func:`tokrag_model._lmeval_hook.patch_caching_lm`), so tasks that differ only in their passages, or two model
configurations, never share a response, and the same command run again reads its own.
"""

from __future__ import annotations

import hashlib
import functools
import inspect
import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402
from lm_eval.api.instance import Instance  # noqa: E402
from lm_eval.api.model import LM  # noqa: E402
from lm_eval.models.utils import Collator, handle_stop_sequences, normalize_gen_kwargs, postprocess_generated_text  # noqa: E402
from tqdm import tqdm  # noqa: E402

from retrieval.errors import ConfigError  # noqa: E402
from retrieval.logs import follow_lm_eval_logging  # noqa: E402

from .args import COMMON_ARGS, MAX_LENGTH_CAP, Arg, merge_lm_eval_flags, model_args_dict, parse_args, requested_auto  # noqa: E402
from .decoder import Batch, Forced, Forcing, MultiContextDecoder, auto_batch_invariant, generate, non_float32_linear_dtype  # noqa: E402
from .distributed import DataParallel  # noqa: E402
from .gen_kwargs import (  # noqa: E402,F401 - re-exported: the checks that need no torch live in .gen_kwargs
    BUDGET_ALIASES, GEN_KWARGS_READ, GREEDY_GEN_KWARGS, NEUTRAL_GEN_KWARGS, SAMPLING_ONLY_GEN_KWARGS, GenKwargsValueError,
    check_gen_kwarg_values, unhonoured_gen_kwargs,
)
from .loading import TOKENIZER_FILES as _LOADING_TOKENIZER_FILES  # noqa: E402
from .loading import (chat_template_before_load, config_shape, has_chat_template, model_shape, resolve_device,  # noqa: E402
                      resolve_pretrained, select_chat_template, set_linear_weight_layout, torch_dtype,
                      weights_fingerprint)
from .prompt import PASSAGES_SLOT, Encoded, PromptBuilder, check_slot, cuts_of, get_ctxs, without_slot  # noqa: E402
from .provenance import compute_environment, imported_tree  # noqa: E402
from ._lmeval_hook import after_import, patch_caching_lm  # noqa: E402

after_import("lm_eval.api.model", patch_caching_lm)  # --use_cache keys: response_cache_args (also without the .pth hook)
imported_tree()  # the tokrag commit this process imported, read once now (also without the .pth hook)

log = logging.getLogger(__name__)


class LogLikelihood(float):
    """A log-likelihood in nats that also carries ``n_tokens``, the number of continuation tokens scored; to
    everything else it is a float. Tasks read it for per-token perplexity (``tasks/wikitext.py``)."""

    n_tokens: int

    def __new__(cls, value: float, n_tokens: int) -> "LogLikelihood":
        obj = super().__new__(cls, value)
        obj.n_tokens = int(n_tokens)
        return obj

    def __reduce__(self):  # pickled by lm-eval's cache and data-parallel gathers
        return (LogLikelihood, (float(self), self.n_tokens))


MODEL_FILE_SUFFIXES: frozenset[str] = frozenset({".json", ".jinja", ".model", ".tiktoken", ".txt", ".py"})
"""Suffixes of a model folder's non-weight files that change its outputs: config, tokenizer (``.model`` sentencepiece,
``.tiktoken`` such as Qwen-1's ``qwen.tiktoken``, read by its remote tokenizer code), generation config, chat
template, remote code (:func:`model_files_fingerprint`; those of :func:`leaderboards.keys.weights_fingerprint`'s key
less the weight formats, plus ``.py``; the files :data:`tokrag_model.loading.HUB_FILES` fetches besides the weights).
``.tiktoken`` since s60: before, a ``qwen.tiktoken`` replaced in place kept the ``--use_cache`` key, the analyze
records key and a preset's ``files_fingerprint`` (a folder holding one is fingerprinted anew once)."""

MODEL_FILES_SKIPPED: frozenset[str] = frozenset({"tokrag_source.json"})
"""Files of a model folder left out of :func:`model_files_fingerprint`: tokrag's own note of where an assembled alias
came from (an absolute path that differs between machines, not read by the load)."""


def model_files_fingerprint(folder: str | os.PathLike) -> str | None:
    """Fingerprint (16 hex) of the files of a model folder that are not its weights but change what it generates:
    ``config.json``, ``generation_config.json`` (e.g. ``eos_token_id``), the tokenizer files, ``chat_template.jinja``,
    remote code (suffixes :data:`MODEL_FILE_SUFFIXES`, every size, sub-folders included, hidden files and
    :data:`MODEL_FILES_SKIPPED` left out): ``[relative path, SHA-256]`` of each, sorted, as
    :func:`retrieval.io.tree_fingerprint`. The weights' own hash is :func:`tokrag_model.loading.weights_fingerprint`.
    File hashes are memoised in :class:`retrieval.io.HashMemo` (the leaderboards' memo file), so a folder costs a
    ``stat`` per file after its first hashing.

    Returns None when ``folder`` is not a folder (a GGUF file, a stand-in backbone in tests) or a file cannot be read.
    """
    from retrieval.io import HashMemo, fingerprint

    root = Path(folder)
    if not root.is_dir():
        return None
    memo = HashMemo()
    items = []
    try:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
            for fn in sorted(filenames):
                p = Path(dirpath) / fn
                if fn.startswith(".") or p.suffix not in MODEL_FILE_SUFFIXES or fn in MODEL_FILES_SKIPPED:
                    continue
                items.append([p.relative_to(root).as_posix(), memo.sha(p)])
    except OSError as exc:
        log.warning("model files fingerprint of %s not recorded: %s", root, exc)
        return None
    try:
        memo.save()
    except OSError:  # a read-only cache: the hashes are simply not kept
        pass
    return fingerprint(items)


def chat_template_sha256(tokenizer: Any, name: bool | str = True) -> str | None:
    """SHA-256 (hex) of the chat template of ``tokenizer`` that ``--apply_chat_template`` ``name`` applies (true: its
    template, of named templates the ``"default"`` one; a template name: that one), selected as lm-eval's
    ``TemplateLM.chat_template`` selects it (:func:`tokrag_model.loading.select_chat_template`, which
    :func:`leaderboards.keys.chat_template_sha256` keys); None without one (or when ``name`` is not among the named
    templates): the ``chat_template_sha256`` a method records in its resolved config (and ``tokrag leaderboard
    rescore`` compares)."""
    try:
        template = select_chat_template(getattr(tokenizer, "chat_template", None), name)
    except ValueError:  # no such name / no "default": RAGMethodLM.selected_chat_template refuses it in one line
        return None
    return _template_sha256(template)


def _template_sha256(template: Any) -> str | None:
    """SHA-256 (hex) of a selected chat template string (UTF-8); None for anything else (no template)."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest() if isinstance(template, str) else None


def no_chat_template_message(method: str, pretrained: Any) -> str:
    """The one-line refusal of ``--apply_chat_template`` for ``--model method`` whose ``pretrained`` tokenizer has no
    chat template (a base model such as ``gemma-3-270m``): :func:`check_chat_template_before_load` and
    :meth:`RAGMethodLM.render_chat` say the same."""
    return (f"--model {method}: --apply_chat_template was given but the tokenizer of pretrained={pretrained!r} has no "
            "chat template (a base model?); run without --apply_chat_template (plain prompt, e.g. task metadata "
            "prompt=base)")


def unknown_chat_template_message(method: str, name: Any, pretrained: Any, why: Any) -> str:
    """The one-line refusal of ``--apply_chat_template`` ``name`` for ``--model method`` whose ``pretrained`` tokenizer
    has named templates without that one (or, ``name`` true, without a ``"default"``); ``why``: lm-eval's message
    naming the templates (:func:`tokrag_model.loading.select_chat_template`'s ValueError).
    :func:`check_chat_template_before_load` and :meth:`RAGMethodLM.selected_chat_template` say the same."""
    return f"--model {method}: --apply_chat_template {name!r} with pretrained={pretrained!r}: {why}"


def check_chat_template_before_load(model: Any, model_args: Any, apply_chat_template: Any) -> None:
    """Refuse lm-eval's ``--apply_chat_template`` (true or a template name; None, False or "" is off) for ``--model``
    ``model`` a tokrag method (:data:`tokrag_model.methods.METHODS`) whose tokenizer has no chat template, where the
    model's files tell it without loading it (:func:`tokrag_model.loading.has_chat_template` of ``model_args``'
    ``pretrained``, default :data:`tokrag_model.args.COMMON_ARGS`'s, and ``revision``; ``model_args``: a dict or
    lm-eval's ``key=value,...`` string). The start-up hook runs it with its other pre-load checks: lm-eval tells the
    model nothing of the flag before it calls :meth:`RAGMethodLM.apply_chat_template`, so :meth:`render_chat` refused
    ``gemma-3-270m`` only after its weights had loaded (about a minute). An alias not converted yet is answered
    by its pinned GGUF (``ALIASES[...]["chat_template"]``), an offline hub id by its cached snapshot; where the files
    do not tell it (offline a hub id not in the local cache, online one whose hub does not answer) :meth:`render_chat`
    still refuses it after the load.
    A tokenizer with named templates (:func:`chat_template_before_load`: a folder, a converted alias, offline a
    cached hub snapshot) is refused a name it does not have
    (``--apply_chat_template tools`` where the names are ``default`` and ``rag``), or a true value without a
    ``"default"``, in the line :meth:`RAGMethodLM.selected_chat_template` says after the load; online, a hub id's
    fetched files (:func:`tokrag_model.loading.hub_files_before_weights`) tell it too.

    Raises:
        ConfigError: :func:`no_chat_template_message`; :func:`unknown_chat_template_message`.
    """
    if apply_chat_template in (None, False, ""):
        return
    from .methods import METHODS

    if not isinstance(model, str) or model not in METHODS:
        return
    args = model_args_dict(model_args)
    if args is None:  # a malformed string: lm-eval reports it itself
        return
    pretrained = args.get("pretrained") or COMMON_ARGS["pretrained"].default
    revision = args.get("revision")
    revision = str(revision) if revision else None
    if has_chat_template(str(pretrained), revision) is False:
        raise ConfigError(no_chat_template_message(model, pretrained))
    template = chat_template_before_load(pretrained, revision=revision)
    if isinstance(template, dict):  # named templates (one string: a name is ignored, lm-eval warns after the load)
        try:
            select_chat_template(template, apply_chat_template)
        except ValueError as exc:
            raise ConfigError(unknown_chat_template_message(model, apply_chat_template, pretrained, exc)) from None


LOCAL_PRETRAINED = "local"
"""What the ``--use_cache`` key (:attr:`RAGMethodLM._response_cache_model`) holds as ``pretrained`` for a local model
folder whose files its fingerprints cover (:func:`_keyed_by_files`), in place of the path as written."""


def _keyed_by_files(pretrained: Any, folder: Any) -> bool:
    """Whether the ``--use_cache`` key may hold ``pretrained`` as :data:`LOCAL_PRETRAINED`: it names a local folder
    (:func:`leaderboards.keys.local_pretrained`: not an alias, not a hub id) that the model loaded from (``folder``,
    the backbone's path), and every file there is one the key's fingerprints hash: a top-level ``.safetensors`` /
    ``.bin`` (:func:`tokrag_model.loading.weights_fingerprint`) or a file of :data:`MODEL_FILE_SUFFIXES`
    (:func:`model_files_fingerprint`), or documentation (a model card, a licence:
    :data:`leaderboards.keys.DOC_FILE_SUFFIXES` / ``DOC_FILE_NAMES``); hidden files and folders and ``__pycache__``
    are not looked at (the loader reads none). A ``.gguf``, a ``.pt`` or a ``weights.pth`` there, or a ``.safetensors``
    in a sub-folder (read by some loaders or a custom model class, hashed by neither fingerprint) keeps the path as
    written: two such folders never share a response. Raises nothing."""
    from leaderboards.keys import first_unhashed_file, local_pretrained

    if folder is None or not local_pretrained(pretrained):
        return False
    root = Path(folder)
    if not root.is_dir():
        return False
    return first_unhashed_file(root, lambda f, top: f.suffix in MODEL_FILE_SUFFIXES
                               or (top and f.suffix in (".safetensors", ".bin"))) is None


def _backbone_files_fingerprint(backbone: Any) -> str | None:
    """:func:`model_files_fingerprint` of ``backbone.path``, computed once per backbone (its method instances share
    it: one walk of the folder and one read and save of the hash memo, not one per method)."""
    cached = getattr(backbone, "_tokrag_files_fingerprint", _UNSET)
    if cached is _UNSET:
        cached = model_files_fingerprint(backbone.path)
        try:
            backbone._tokrag_files_fingerprint = cached
        except AttributeError:  # a stand-in backbone with __slots__: computed per method
            pass
    return cached


_UNSET = object()


ANSWER_CODE_PACKAGES: tuple[str, ...] = ("tokrag_model", "tasks")
"""The packages whose code computes a tokrag model's answers (the methods, decoder and prompts; the answer-line
helpers of ``tasks.utils`` and ``tasks.metrics`` that REPLUG and the Self-RAG filter call): their source fingerprint
is part of the ``--use_cache`` key (:func:`answer_code_fingerprint`)."""


@functools.lru_cache(maxsize=None)
def answer_code_fingerprint() -> str:
    """Fingerprint (16 hex) of the source of :data:`ANSWER_CODE_PACKAGES` as this process imported it: per package,
    :func:`leaderboards.keys.code_fingerprint` (the leaderboard run keys' model-code hash: ``[relative path, SHA-256]``
    of the ``.py``/``.yaml``/``.yml``/``.jinja`` files, a ``.py`` file's SHA-256 that of its code without docstrings,
    comments or layout (:func:`retrieval.io.normalised_source`; its bytes' when it does not parse), the others' that
    of their bytes; file hashes memoised in :class:`retrieval.io.HashMemo`), so a docstring or comment edit keeps the
    cached responses. Computed once per process (~1 s on a first run, which parses each file, a ``stat`` per file
    after), when the first model is built (a file edited during the run does not change it); part of
    :meth:`RAGMethodLM.response_cache_args`, so answers cached by other tokrag code (an edited method, another commit)
    are recomputed, not read back under the new code's provenance."""
    from leaderboards.keys import _HashMemo, code_fingerprint
    from retrieval.io import fingerprint

    memo = _HashMemo()
    value = fingerprint([[package, code_fingerprint(package, memo)] for package in ANSWER_CODE_PACKAGES])
    try:
        memo.save()
    except OSError:  # a read-only cache: the hashes are simply not kept
        pass
    return value


def _why(exc: BaseException) -> str:
    """An exception's message on one line (its type's name when empty), for a one-line :class:`ConfigError`."""
    return " ".join(line.strip() for line in str(exc).splitlines() if line.strip()) or type(exc).__name__


TOKENIZER_VOCAB_FILES: tuple[str, ...] = _LOADING_TOKENIZER_FILES
"""A model folder's tokenizer vocabulary files (glob patterns) that transformers' tokenizers load from
(:data:`tokrag_model.loading.TOKENIZER_FILES`, one list for both checks); a folder with none of them has no tokenizer
(:func:`_no_tokenizer_files`)."""


def _no_tokenizer_files(pretrained: str, path: Path) -> str | None:
    """The one-line :class:`ConfigError` message for a model folder ``path`` with none of
    :data:`TOKENIZER_VOCAB_FILES`, else None. transformers' own error for such a folder asked to install
    sentencepiece or tiktoken ("to convert a slow tokenizer to a fast one"), which does not help."""
    folder = Path(path)
    if not folder.is_dir() or any(next(folder.glob(pattern), None) for pattern in TOKENIZER_VOCAB_FILES):
        return None
    return (f"pretrained={pretrained!r}: folder {folder} has no tokenizer files (expected tokenizer.json with "
            "tokenizer_config.json, or a vocabulary such as tokenizer.model, or vocab.json and merges.txt): copy the "
            "tokenizer files of the model (e.g. from its hub repository) into the folder")


def _load_error(pretrained: str, path: Path, exc: BaseException, what: str = "a causal LM") -> str:
    """The one-line :class:`ConfigError` message when :meth:`Backbone.load` (or :func:`load_tokenizer`) cannot load
    from the model folder ``path``: a folder without tokenizer files, a truncated or damaged ``.safetensors`` file
    (safetensors' ``SafetensorError``: 'incomplete metadata', 'invalid JSON in header'), else ``exc``'s message."""
    from safetensors import SafetensorError

    missing = _no_tokenizer_files(pretrained, path)
    if missing:
        return missing
    if isinstance(exc, SafetensorError):
        return (f"pretrained={pretrained!r}: cannot read the weights in {path}: {_why(exc)} (a truncated or damaged "
                ".safetensors file: copy or download the model again)")
    return f"pretrained={pretrained!r}: cannot load {what} from {path}: {_why(exc)}"


def _auto_tokenizer(path: str, revision: str | None, trust_remote_code: bool) -> Any:
    """``AutoTokenizer.from_pretrained`` as :meth:`Backbone.load` and :func:`load_tokenizer` call it (one place)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, revision=revision, trust_remote_code=trust_remote_code)


def load_tokenizer(pretrained: str, revision: str | None = None, trust_remote_code: bool = False) -> Any:
    """The tokenizer :meth:`Backbone.load` would load for ``pretrained`` (an alias, hub id or local path, resolved by
    :func:`tokrag_model.loading.resolve_pretrained`), without the weights (``tokrag leaderboard rescore``).

    Raises:
        ConfigError, OfflineError: ``pretrained`` cannot be resolved (:func:`tokrag_model.loading.resolve_pretrained`);
            ConfigError naming ``pretrained`` and the folder when no tokenizer loads from it.
    """
    res = resolve_pretrained(str(pretrained), revision=revision)
    try:
        return _auto_tokenizer(res.path, revision, trust_remote_code)
    except (OSError, ValueError) as exc:
        raise ConfigError(_load_error(pretrained, res.path, exc, "a tokenizer")) from None


def rolling_prefix_token_id(tokenizer: Any) -> int:
    """The token in front of a rolling text's first window: ``tokenizer``'s BOS, else its EOS (lm-eval's ``hf``
    ``prefix_token_id``; :attr:`RAGMethodLM.rolling_prefix_token_id`), also for a tokenizer loaded without the model
    (:func:`first_window_text`)."""
    bos = getattr(tokenizer, "bos_token_id", None)
    return int(tokenizer.eos_token_id) if bos is None else bos


def first_window_text(tokenizer: Any) -> str:
    """The text of the token in front of a rolling text's first window (:func:`rolling_prefix_token_id`, decoded with
    the special tokens kept): :meth:`RAGMethodLM.first_window_context` without the passages slot, also for a tokenizer
    loaded without the model (:func:`tasks.precheck.selfrag_lm_question_refusal`)."""
    return tokenizer.decode([rolling_prefix_token_id(tokenizer)], skip_special_tokens=False)


def _device_type(device: Any) -> Any:
    """``device``'s type (``cpu:0`` -> ``cpu``, ``cuda:1`` -> ``cuda``; ``cpu``, ``mps`` unchanged); a value torch
    does not parse (None, a test's stand-in) is returned as given."""
    try:
        return torch.device(str(device)).type if device is not None else None
    except (RuntimeError, ValueError):
        return device


@dataclass
class Backbone:
    """A loaded causal LM shared by method instances: model, tokenizer, local folder, weights fingerprint."""

    model: Any
    tokenizer: Any
    path: Path
    source: str
    fingerprint: str
    dtype: str
    device: str
    weight_layout: str = "row"
    hub_commit: str | None = None  # :attr:`tokrag_model.loading.ResolvedModel.hub_commit`

    @classmethod
    def load(cls, pretrained: str, dtype: str = "float32", device: str = "cpu", revision: str | None = None,
             trust_remote_code: bool = False, weight_layout: str = "auto") -> "Backbone":
        """Resolve ``pretrained`` (see :mod:`tokrag_model.loading`) and load it in eval mode.

        ``weight_layout``: see :func:`tokrag_model.loading.set_linear_weight_layout` (``auto``: column-major
        Linear weights on CPU in float32, faster decode steps; as loaded elsewhere).

        Raises:
            ConfigError, OfflineError: see :func:`tokrag_model.loading.resolve_pretrained`; an unknown
            ``weight_layout``; ConfigError (one line): a folder transformers cannot load from, one without tokenizer
            files, a truncated or damaged ``.safetensors`` file.
            DataError: an alias's installed GGUF that cannot be read (:func:`tokrag_model.loading.resolve_alias`).
        """
        from huggingface_hub.errors import StrictDataclassError
        from safetensors import SafetensorError
        from transformers import AutoModelForCausalLM

        res = resolve_pretrained(pretrained, revision=revision)  # the revision's snapshot (was always main)
        dev = resolve_device(device)
        td = torch_dtype(dtype)
        try:
            tok = _auto_tokenizer(res.path, revision, trust_remote_code)
            model = AutoModelForCausalLM.from_pretrained(res.path, dtype=td, revision=revision,
                                                         trust_remote_code=trust_remote_code).to(dev).eval()
        # StrictDataclassError: a config field of the wrong type; SafetensorError: a truncated or damaged weights file
        except (OSError, ValueError, StrictDataclassError, SafetensorError) as exc:
            raise ConfigError(_load_error(pretrained, res.path, exc)) from None
        layout = set_linear_weight_layout(model, weight_layout, dev)
        return cls(model, tok, res.path, res.source, weights_fingerprint(res.path), str(model.dtype).replace("torch.", ""),
                   dev, layout, res.hub_commit)


class WindowContext(str):
    """A later ``loglikelihood_rolling`` window's context: to every method a ``str``, its text (what a method reads,
    e.g. the filter's critic; ``trace_prompts`` shows the prompts), carrying ``ids``, the token ids lm-eval's rolling
    windows cut it as. :meth:`RAGMethodLM.encode_pure` and :meth:`RAGMethodLM.encode_rag` build its prompts from
    ``ids`` as they are (the passages block's ids in front), never from the text re-encoded: decoding ids to text and
    encoding it again changed them where a window boundary split a multi-byte character, and added a BOS to every
    later window on tokenizers that add one (Gemma), where lm-eval's ``hf`` scores the window's ids alone. Neither
    prompt has a BOS (the block is encoded without one). Copies, deep copies and pickles keep ``ids``."""

    ids: tuple[int, ...]

    def __new__(cls, text: str, ids: Any) -> "WindowContext":
        obj = super().__new__(cls, text)
        obj.ids = tuple(int(t) for t in ids)
        return obj

    def __getnewargs__(self) -> tuple[str, tuple[int, ...]]:
        """``__new__``'s arguments for :mod:`copy` and :mod:`pickle` (``str``'s own gives the text alone)."""
        return str(self), self.ids


@dataclass
class ScorePlan:
    """How one ``loglikelihood`` request (or rolling window) is scored: the branch ``prompts`` to
    teacher-force on the same continuation ``cont`` (token ids), and ``finish``, which turns their
    :class:`tokrag_model.decoder.Forced` outputs (same order as ``prompts``) into ``(log-likelihood in
    nats, is_greedy, trace)``. ``hidden``/``keys``: per prompt, also keep its hidden states / keys.

    The base class batches the plans of many requests into teacher-forced passes (at most
    ``batch_size`` plans, and the decoder's token and padding limits, per pass); a method's
    ``score_plan`` only builds prompts and combines log-probs (no loop over requests of its own).
    """

    prompts: list[list[int]]
    cont: list[int]
    finish: Callable[[list[Forced]], tuple[float, bool, dict]]
    hidden: list[bool] = field(default_factory=list)
    keys: list[bool] = field(default_factory=list)

    def forcings(self) -> list[Forcing]:
        return [Forcing(p, self.cont, bool(self.hidden[i]) if i < len(self.hidden) else False,
                        bool(self.keys[i]) if i < len(self.keys) else False) for i, p in enumerate(self.prompts)]

    @property
    def n_tokens(self) -> int:
        """Tokens this plan teacher-forces (its batch cost; the sort key)."""
        return sum(len(p) + len(self.cont) for p in self.prompts)


class RAGMethodLM(LM):
    """Base of every method (an lm-eval ``LM``).

    Model arguments: :data:`tokrag_model.args.COMMON_ARGS` plus the method's ``EXTRA_ARGS``; unknown
    keys raise :class:`ConfigError` listing the valid ones.

    Attributes:
        stats: ``forward_passes`` (sequence forwards; a batched call over B rows counts B),
            ``generated_tokens`` (the tokens of the answers returned), ``prompt_tokens`` (prefilled/teacher-forced
            tokens), ``branch_tokens`` (the tokens of every decoded branch: for ``replug_mode=answer_vote`` and
            ``selection=rank`` the candidates not returned too; else equal to ``generated_tokens``).
        fingerprint: weights hash (SHA-256 prefix over the safetensors files).
        files_fingerprint: hash of the model folder's config, generation config, tokenizer, chat template and remote
            code files (:func:`model_files_fingerprint`; None for a folder-less model).
        resolved_config: every model argument after defaults and casting, plus ``chat_template_sha256``
            (SHA-256 of the tokenizer's chat template, of named templates the ``"default"`` one; None without one;
            the results record the one an evaluation applied: :func:`chat_template_sha256`).
        requested_auto: the arguments asked as ``auto`` (given so, or left at the default ``auto``), as given
            (:func:`tokrag_model.args.requested_auto`; ``resolved_config`` holds what they resolved to).
        cached_responses: responses lm-eval's ``--use_cache`` read back for this model in the current evaluation (None
            without the cache; reset by :meth:`start_evaluation`).
        code_fingerprint: :func:`answer_code_fingerprint` when the model was built (part of the ``--use_cache`` key).
        JOURNAL_REPLAY_SAFE: (class) True: a response depends only on its request and the global random states
            (Python's, NumPy's, torch's), so ``tokrag leaderboard run`` may resume a killed cell by replaying its
            journaled requests, which the new instance never sees (``leaderboards.runner.replay_safe``). A method
            that keeps state changing later outputs (its own generator, a cache whose hits differ in value from a
            recomputation) sets it False.
    """

    METHOD = "base"
    JOURNAL_REPLAY_SAFE = True
    chat_template_name: bool | str = True  # lm-eval's --apply_chat_template of this evaluation (a name selects one)
    USES_PASSAGES = True
    EXTRA_ARGS: dict[str, Arg] = {}

    def __init__(self, backbone: Backbone | None = None, **kwargs: Any) -> None:
        super().__init__()
        follow_lm_eval_logging()  # under lm_eval, a model conversion's INFO line shows
        cfg = parse_args(self.METHOD, {**COMMON_ARGS, **self.EXTRA_ARGS}, kwargs)
        # fail before the weights load (setup() applies the resolved arguments): layer=99 took the whole load
        self.check_model_shape(self.resolve_args(cfg, kwargs), backbone)
        self.given_args = dict(kwargs)  # the arguments as given: resolve_args in setup() tells them from defaults
        self.requested_auto = requested_auto({**COMMON_ARGS, **self.EXTRA_ARGS}, kwargs)  # before they resolve
        self.resolved_config = cfg
        # Data parallel under `accelerate launch` / torchrun (lm-eval shards requests by rank).
        self.dp = DataParallel(resolve_device(cfg["device"]) if backbone is None else backbone.device)
        self._rank, self._world_size = self.dp.rank, self.dp.world_size
        if backbone is None:
            backbone = Backbone.load(cfg["pretrained"], cfg["dtype"], self.dp.device, cfg["revision"], cfg["trust_remote_code"],
                                     cfg["weight_layout"])
        self.backbone = backbone
        self.model, self.tokenizer = backbone.model, backbone.tokenizer
        self.fingerprint = backbone.fingerprint
        self.files_fingerprint = _backbone_files_fingerprint(backbone)  # before the run: config/tokenizer files
        self.code_fingerprint = answer_code_fingerprint()  # the code as imported (not as edited during the run)
        cfg["device"] = backbone.device
        cfg["weight_layout"] = backbone.weight_layout
        mcfg = self.model.config
        native = getattr(mcfg, "max_position_embeddings", None) or 2048
        self.max_length = int(cfg["max_length"] or min(int(native), MAX_LENGTH_CAP))
        cfg["max_length"] = self.max_length
        self.batch_size = cfg["batch_size"]
        self.stats: dict[str, int] = {"forward_passes": 0, "generated_tokens": 0, "prompt_tokens": 0,
                                        "branch_tokens": 0}
        self.cached_responses: int | None = None  # --use_cache: responses read back (_lmeval_hook.patch_caching_lm)
        if cfg["batch_invariant"] == "auto":  # on CPU in float32 (decoder: other dtypes' products are not probed)
            cpu = str(backbone.device).startswith("cpu")
            other_dtype = non_float32_linear_dtype(self.model) if cpu else None
            cfg["batch_invariant"] = auto_batch_invariant(backbone.device, other_dtype)  # leaderboards' backbone_key too
            if other_dtype is not None:
                log.info("batch_invariant=auto resolves to false: %s weights on CPU give a row other bits at other "
                         "batch sizes (dtype=float32, the default, is batch-invariant)", other_dtype)
        # threads and hardware at load (the decoder's MKL probe below holds for this thread count): results record it
        self.machine = compute_environment(backbone.device)
        self.decoder = MultiContextDecoder(self.model, self.stats, batch_invariant=cfg["batch_invariant"])
        self.prompts = PromptBuilder(self.tokenizer, cfg["passage_template"], cfg["add_bos_token"], cfg["max_passage_tokens"])
        cfg["chat_template_sha256"] = chat_template_sha256(self.tokenizer)
        self.chat_template_applied = False  # lm-eval renders a chat (--apply_chat_template): per evaluation, start_evaluation
        # this evaluation's tasks and lm-eval output types (note_evaluation_tasks); None outside lm-eval's evaluate
        self.evaluation_tasks: dict[str, str | None] | None = None
        # this evaluation's contexts are plain (no passages slot but a rolling text's first window's): start_evaluation;
        # None outside an evaluation (a context may be a chat rendered by another model object): _check_slot
        self.plain_contexts: bool | None = None
        # the generation settings that acted, per generation-kwargs group decoded in this evaluation (_gen_settings)
        self.generation_used: list[dict[str, Any]] = []
        eos = {self.tokenizer.eos_token_id}
        gen_eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        eos |= set(gen_eos) if isinstance(gen_eos, (list, tuple)) else {gen_eos}
        self.eos_ids = {int(e) for e in eos if e is not None}
        self._special = set(self.tokenizer.all_special_ids)
        self._tok_cache: dict[int, tuple[str, bool]] = {}
        self.setup()

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict[str, Any], additional_config: dict[str, Any] | None = None) -> "RAGMethodLM":
        """lm-eval's constructor hook: ``arg_dict`` (``--model_args``) merged with lm-eval's ``--device`` /
        ``--batch_size`` / ``--max_batch_size`` (:func:`tokrag_model.args.merge_lm_eval_flags`: a key given in
        both takes the ``--model_args`` value instead of lm-eval's ``TypeError``)."""
        return cls(**merge_lm_eval_flags(cls.METHOD, arg_dict, additional_config))

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict[str, Any] | None = None) -> "RAGMethodLM":
        """As :meth:`create_from_arg_obj`, from ``key=value,...`` (lm-eval's own parser)."""
        from lm_eval.utils import simple_parse_args_string

        return cls.create_from_arg_obj(simple_parse_args_string(arg_string), additional_config)

    @classmethod
    def with_backbone(cls, backbone: Backbone, **kwargs: Any) -> "RAGMethodLM":
        """Build the method over an already loaded model (tests, benchmarks, sweeps: load once). The resolved config
        records the backbone's dtype unless ``dtype`` is given (it recorded the default float32 for a bfloat16 one)."""
        kwargs.pop("pretrained", None)
        if getattr(backbone, "dtype", None):  # a stand-in without one (tests) keeps the default
            kwargs.setdefault("dtype", backbone.dtype)
        return cls(backbone=backbone, pretrained=str(backbone.path), **kwargs)

    @classmethod
    def resolve_args(cls, cfg: dict[str, Any], given: dict[str, Any], preset: dict | None = None) -> dict[str, Any]:
        """``cfg`` (from :func:`tokrag_model.args.parse_args`) with arguments that come from files applied and
        checks that span several arguments done; ``given`` maps the arguments the user gave explicitly to
        their values. The base returns ``cfg`` unchanged; :class:`~tokrag_model.methods.tokrag.TokRAGLM`
        applies its ``preset``. Called before the weights load, by the method's :meth:`setup` and by
        ``tokrag leaderboard run`` / ``--estimate`` before any cell (loads no model).

        Raises:
            ConfigError: an argument that would have no effect (e.g. a dynamic-layer argument with a fixed layer).
        """
        return cfg

    @classmethod
    def generation_only(cls, cfg: dict[str, Any]) -> str | None:
        """The model argument, as ``key=value``, with which the resolved config ``cfg`` (:meth:`resolve_args`) answers
        only ``generate_until`` requests (its ``loglikelihood`` / ``loglikelihood_rolling`` raise ConfigError at the
        first request), or None when it scores as well. The base: None (every method scores); ``rag-replug`` with
        ``replug_mode=answer_vote`` and ``rag-selfrag-filter`` with ``selection=rank`` declare themselves. Asked by the
        leaderboard's pre-run check (:func:`leaderboards.runner.check_cell_args`) for every cell whose task does not
        generate, before any model loads; loads nothing."""
        return None

    def refuse_if_generation_only(self, message: str) -> None:
        """Refuse a scoring request of a generation-only config: raise ``ConfigError(message)`` when
        :meth:`generation_only` of :attr:`resolved_config` is not None, else return. Called by the methods that
        declare :meth:`generation_only` (``rag-replug``'s ``score_plan``; ``rag-selfrag-filter``'s ``score_plan``,
        ``loglikelihood`` and ``loglikelihood_rolling``) before any forward pass; ``message``: the method's one-line
        error.

        Raises:
            ConfigError: the resolved config only generates.
        """
        if self.generation_only(self.resolved_config):
            raise ConfigError(message)

    @classmethod
    def check_model_shape(cls, cfg: dict[str, Any], backbone: Backbone | None = None) -> None:
        """The method's ``check_shape`` (if it has one: ``tokrag``'s layer arguments, ``rag_top``/``pure_top``, its
        preset's depth) of the resolved config ``cfg`` (:meth:`resolve_args`) against the model's depth and vocabulary
        size, read from the config of ``backbone`` when one is given, else of ``cfg["pretrained"]`` without loading,
        converting or downloading weights (:func:`tokrag_model.loading.model_shape`; not checked where the shape is
        not known so, e.g. a hub id not in the local cache: the load checks it). The same check, with the same
        messages, as the leaderboard's pre-run check (:func:`leaderboards.runner.check_cell_args`); :meth:`__init__`
        calls it before the weights load, so a preset calibrated on other weights of another depth fails here
        with its depth ("made for N layers") before the load's fingerprint check would name the other weights.

        Raises:
            ConfigError: from ``check_shape`` (``--model tokrag: layer=99 is outside the model's 30 layers (0..29)``).
        """
        check_shape = getattr(cls, "check_shape", None)
        if not callable(check_shape):
            return
        if backbone is not None:
            shape = config_shape(backbone.model.config)
        else:
            shape = model_shape(str(cfg["pretrained"]), cfg.get("revision"))
        if shape is not None:
            check_shape(cfg, shape.n_layers, shape.vocab_size)

    def setup(self) -> None:
        """Hook for per-method state built from ``resolved_config``."""

    def resolved_values(self) -> dict[str, Any]:
        """Values the method resolved from its arguments and the model or the docs (e.g. ``tokrag``'s ``layer=0.625``
        -> decoder layer 19 of SmolLM2's 30), recorded in the results' ``tokrag_resolved_config`` beside the arguments
        (``<argument>_resolved`` keys) by :meth:`get_model_info`; the arguments keep their values as given, so
        configs and run keys stay comparable, and ``resolved_config`` itself is unchanged. Asked after the run (some,
        like ``rag-replug``'s temperature, come from the docs). The base has none."""
        return {}

    # ------------------------------------------------------------------ bookkeeping
    def reset_stats(self) -> None:
        for key in self.stats:
            self.stats[key] = 0

    def start_evaluation(self, apply_chat_template: Any = False, use_cache: bool = False) -> None:
        """Reset what the results ``config`` records per evaluation, at the start of each of lm-eval's ``evaluate``
        calls (the start-up hook, :func:`tokrag_model._lmeval_hook.patch_evaluator`): a model object reused for
        several evaluations (a notebook, ``tokrag leaderboard run``'s cells) recorded ``tokrag_chat_template_applied``
        true for a plain-prompt run after a chat one, and kept the cache hook and ``tokrag_cached_responses`` of an
        earlier ``use_cache`` run (counts summed over runs; no ``tokrag_trace`` logged without the cache).

        :attr:`chat_template_applied` becomes ``bool(apply_chat_template)`` (lm-eval renders every context with
        :meth:`apply_chat_template` exactly when it is true, or reuses requests so rendered under ``cache_requests``)
        and :attr:`chat_template_name` the value itself when true (a template name: :meth:`selected_chat_template`);
        :attr:`cached_responses` becomes 0 under ``use_cache`` (``evaluate`` got lm-eval's ``CachingLM`` over this
        model, whose hook it holds) and None without, when a stale ``CachingLM``'s hook is replaced by an empty one.
        :attr:`evaluation_tasks` becomes None until the hook names the evaluation's tasks
        (:meth:`note_evaluation_tasks`); :attr:`generation_used` (the results' ``tokrag_generation``) becomes empty.
        """
        self.chat_template_applied = bool(apply_chat_template)
        self.generation_used = []
        self.evaluation_tasks = None
        self.plain_contexts = not apply_chat_template
        self.chat_template_name = apply_chat_template if apply_chat_template else True
        self.cached_responses = 0 if use_cache else None
        if not use_cache and getattr(getattr(self, "cache_hook", None), "dbdict", None) is not None:
            from lm_eval.api.model import CacheHook

            self.set_cache_hook(CacheHook(None))

    def note_evaluation_tasks(self, output_types: dict[str, str | None]) -> None:
        """Record this evaluation's tasks and their lm-eval output types (``{task name: OUTPUT_TYPE}``), told by the
        start-up hook's ``evaluate`` after :meth:`start_evaluation` (:func:`tokrag_model._lmeval_hook.patch_evaluator`):
        :meth:`get_model_info` records from them which tasks the chat template reached. A ``loglikelihood_rolling``
        request is the document's text alone (lm-eval 0.4.13 ``ConfigurableTask.construct_requests``: ``arguments =
        (doc_to_target(doc),)``): under ``--apply_chat_template`` lm-eval renders the task's chat (it calls
        :meth:`apply_chat_template`) and drops it, so the chat never reaches the model. Known from the tasks, not from
        the requests the model answers: ``--use_cache`` and a resumed leaderboard cell answer some without it."""
        self.evaluation_tasks = {str(name): kind for name, kind in output_types.items()}

    def chat_template_reached(self) -> dict[str, bool] | None:
        """Per task of this evaluation (:attr:`evaluation_tasks`, sorted by name), whether its requests carry the chat
        lm-eval rendered with the template (false for a ``loglikelihood_rolling`` task: :meth:`note_evaluation_tasks`);
        None without ``--apply_chat_template`` or when the tasks are not known (a direct call outside lm-eval's
        ``evaluate``). Recorded as ``tokrag_chat_template_tasks`` (:meth:`get_model_info`)."""
        tasks = getattr(self, "evaluation_tasks", None)
        if not self.chat_template_applied or tasks is None:
            return None
        return {t: tasks[t] != "loglikelihood_rolling" for t in sorted(tasks)}

    def renders_own_chat(self) -> bool:
        """Whether this method renders prompts of its own (besides the task's contexts) with this evaluation's chat
        template (:meth:`selected_chat_template`, via :meth:`render_chat`) whatever the tasks' output types, so the
        template reaches the model even where no task's contexts got the chat (a ``loglikelihood_rolling`` task):
        :meth:`get_model_info` then records that template's hash. The base renders none (False);
        ``rag-selfrag-filter``'s critic does (``critic_chat_template``)."""
        return False

    @property
    def device(self) -> str:
        return self.backbone.device

    # lm-eval's collectives for data-parallel runs (identity with one process); see tokrag_model.distributed
    def all_gather(self, tensor):
        return self.dp.all_gather(tensor)

    def gather_object(self, obj, dst=0):
        return self.dp.gather_object(obj, dst=dst)

    def barrier(self) -> None:
        self.dp.barrier()

    @property
    def eot_token_id(self) -> int:
        return int(self.tokenizer.eos_token_id)

    @property
    def tokenizer_name(self) -> str:
        return str(self.backbone.path).replace("/", "__")

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        """lm-eval's hook: the chat template string applied (hashed into lm-eval's results) when one is applied (called
        with a true value, or a template name, only under ``--apply_chat_template``: it marks
        :attr:`chat_template_applied`, also where ``--cache_requests`` reuses rendered requests without
        :meth:`apply_chat_template`, and selects the template :meth:`render_chat` renders with:
        :meth:`selected_chat_template`).

        Raises:
            ConfigError: a template name the tokenizer does not have (:meth:`selected_chat_template`).
        """
        if not chat_template:
            return None
        self.chat_template_applied = True
        self.plain_contexts = False
        self.chat_template_name = chat_template
        return self.selected_chat_template()

    def selected_chat_template(self) -> str | None:
        """The chat template string of this evaluation: the tokenizer's template, or of named templates (a
        ``tokenizer_config.json`` list, which transformers loads as a dict) the one :attr:`chat_template_name` names
        (``--apply_chat_template rag``), else ``"default"``, as lm-eval's ``TemplateLM.chat_template`` selects it
        (:func:`tokrag_model.loading.select_chat_template`); None without a template.

        Raises:
            ConfigError: the name is not one of the named templates, or there is no ``"default"`` among them (the
                names listed: :func:`unknown_chat_template_message`; refused before the load where the files tell it,
                :func:`check_chat_template_before_load`).
        """
        name = self.chat_template_name
        cached = self.__dict__.get("_selected_chat_template")
        if cached is not None and cached[0] == name and type(cached[0]) is type(name):
            return cached[1]
        try:
            text = select_chat_template(getattr(self.tokenizer, "chat_template", None), name)
        except ValueError as exc:
            raise ConfigError(unknown_chat_template_message(self.METHOD, name, self.resolved_config["pretrained"],
                                                            exc)) from None
        self._selected_chat_template = (name, text)  # once per evaluation, not per request (lm-eval's warnings)
        return text

    def render_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """``messages`` rendered by the tokenizer's chat template (text, not ids): :meth:`selected_chat_template`.

        Raises:
            ConfigError: the tokenizer has no chat template (a base model: run without --apply_chat_template;
                :func:`no_chat_template_message`). The start-up hook refuses it before the weights load where the
                model's files tell it (:func:`check_chat_template_before_load`). A template name it does not have
                (:meth:`selected_chat_template`).
        """
        if not getattr(self.tokenizer, "chat_template", None):  # usually refused before the load already
            raise ConfigError(no_chat_template_message(self.METHOD, self.resolved_config["pretrained"]))
        return self.tokenizer.apply_chat_template(messages, chat_template=self.selected_chat_template(), tokenize=False,
                                                  add_generation_prompt=add_generation_prompt,
                                                  continue_final_message=not add_generation_prompt)

    @classmethod
    def chat_renderer(cls, tokenizer: Any, pretrained: str) -> Callable[..., str]:
        """This method's :meth:`apply_chat_template` over ``tokenizer`` without a model (no weights loaded): what
        ``tokrag leaderboard rescore`` renders a run's prompts again with. The bare instance holds what
        :meth:`apply_chat_template` and :meth:`render_chat` read: the tokenizer and ``pretrained`` (named in errors)."""
        lm = cls.__new__(cls)
        lm.tokenizer, lm.resolved_config, lm.chat_template_applied = tokenizer, {"pretrained": pretrained}, False
        return lm.apply_chat_template

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """lm-eval's hook for ``--apply_chat_template`` (with ``--system_instruction`` and
        ``--fewshot_as_multiturn``): the chat rendered by the tokenizer's template with
        :data:`tokrag_model.prompt.PASSAGES_SLOT` at the start of the *first user turn's* content. Every
        branch of every method is built from this one string: :meth:`encode_rag` puts its passages block
        in the slot, :meth:`encode_pure` removes it, so the passages sit inside the first user turn,
        before the task's text (few-shot examples, question).

        Raises:
            ConfigError: no user turn in the history, a turn's text holds the slot itself (the passages would go there:
                :func:`tokrag_model.prompt.check_slot`), or no chat template (:meth:`render_chat`).
        """
        history = [dict(m) for m in chat_history]
        first_user = next((m for m in history if m.get("role") == "user"), None)
        if first_user is None:
            raise ConfigError(f"--model {self.METHOD}: the chat has no user turn to hold the passages "
                              f"(roles: {[m.get('role') for m in history]})")
        for m in history:
            role = m.get("role")
            where = f"the chat's {role} turn" + (": --system_instruction or the task's description" if role == "system" else "")
            check_slot(str(m.get("content", "")), True, self.METHOD, where)
        first_user["content"] = PASSAGES_SLOT + str(first_user.get("content", ""))
        self.chat_template_applied = True
        self.plain_contexts = False
        return self.render_chat(history, add_generation_prompt)

    def recorded_config(self) -> dict[str, Any]:
        """:attr:`resolved_config` as the results (``tokrag_resolved_config``) and a leaderboard cell's
        ``provenance.json`` (``model_resolved_config``) record it: the ``max_gen_toks`` model argument under
        ``max_gen_toks_default``, the budget used only where the task's generation kwargs give none (a task's
        ``max_gen_toks: 16`` wins; every cell recorded ``max_gen_toks: 256`` beside it, read as the budget used; the
        budget used is in ``tokrag_generation``). :attr:`resolved_config` itself, which keys ``--use_cache`` and
        the leaderboard's journals, is unchanged."""
        cfg = dict(self.resolved_config)
        if "max_gen_toks" in cfg:
            cfg = {("max_gen_toks_default" if k == "max_gen_toks" else k): v for k, v in cfg.items()}
        return cfg

    def get_model_info(self) -> dict:
        """Recorded by lm-eval in the results JSON ``config``: method, resolved config (with the values the method
        resolved from it: :meth:`resolved_values`; and ``requested_auto``: :attr:`requested_auto`, e.g.
        ``{"batch_invariant": "auto", "weight_layout": "auto"}``, which tells ``batch_invariant: false`` resolved from
        ``auto`` from an explicit ``false``; not in :attr:`resolved_config`, so no ``--use_cache`` or journal key
        changes; under ``--apply_chat_template`` its ``chat_template_sha256`` is the template that reached the model, a
        named one included: :meth:`selected_chat_template`, where it reached a task's contexts or the method's own
        prompts, :meth:`renders_own_chat`, e.g. ``rag-selfrag-filter``'s critic on rolling tasks only; else the
        tokenizer's, as without the flag), whether the chat template reached the tasks' contexts
        (``tokrag_chat_template_applied``: true when lm-eval rendered the contexts of at least one task's requests
        with it; false without ``--apply_chat_template``, and with it when every task is ``loglikelihood_rolling``,
        whose requests are the text alone, the rendered chat dropped, also where the method's own prompts used it)
        and per task
        (``tokrag_chat_template_tasks``, :meth:`chat_template_reached`: ``{task: true|false}``; None without
        ``--apply_chat_template``), weights fingerprint
        (``tokrag_model_fingerprint``), the fingerprint of the folder's other files (``tokrag_model_files_fingerprint``:
        config, generation config, tokenizer, chat template, remote code; :func:`model_files_fingerprint`), where the
        model came from (``tokrag_model_source``; ``tokrag_model_hub_commit``: the hub commit a hub id resolved to, also
        for a Hugging Face cache snapshot folder given as a path, None for an alias or any other local folder;
        ``tokrag_model_alias``: for an alias (``smollm2-135m-instruct``, ``gemma-3-270m``) the GGUF's package, version,
        sha256 and license, the converted folder and the converter key, :func:`tokrag_model.loading.alias_record`, None
        for a hub id or folder), ``tokrag_versions`` (:attr:`_library_versions`: torch, transformers, lm_eval and
        :func:`leaderboards.keys.library_versions`' tokenizers, retrieval engine (pyserini, the Anserini jar, FAISS),
        jinja2, metric libraries (numpy, scipy, scikit-learn, rouge-score, rouge) and datasets;
        ``tokrag`` = its installed version and ``tokrag_commit`` = the git commit of its source tree, None outside a git
        checkout; ``tokrag_changes`` = a fingerprint of a modified checkout's changes against that commit, None for a
        clean one: :mod:`tokrag_model.provenance`), and
        ``tokrag_machine``: torch's intra-/inter-op thread counts at model load, ``OMP_NUM_THREADS`` /
        ``MKL_NUM_THREADS`` as given, the CPU's kernel capability and model name, and the CUDA device's name
        (:func:`tokrag_model.provenance.compute_environment`; on CPU a forward pass's bits depend on the threads and
        the CPU's kernels), ``tokrag_generation``: the generation settings that acted, one entry per task and
        generation-kwargs group this evaluation decoded (:attr:`generation_used`: ``task``, ``gen_kwargs`` as requested,
        then ``until``, ``max_gen_toks``, ``do_sample`` as decoded; the resolved config's ``max_gen_toks_default``,
        :meth:`recorded_config`, acts only where a task gives no budget; a group whose every response lm-eval's
        ``--use_cache`` read back is not decoded, so not listed), and ``tokrag_cached_responses``: how many of this
        process's responses lm-eval's
        ``--use_cache`` read back instead of computing (None without ``--use_cache``). Not part of any run key."""
        from .loading import alias_record
        from .provenance import tokrag_changes, tokrag_source

        source = tokrag_source()
        src = self.backbone.source
        alias = src.removeprefix("alias:") if src.startswith("alias:") else None
        # the chat template this evaluation applied (a named one: --apply_chat_template rag), as selected once for it
        # (a second selection repeated lm-eval's "Chat template name provided, but ..." warning)
        reached = self.chat_template_reached()
        chat = self.chat_template_applied and (reached is None or any(reached.values()))  # rolling tasks only: none
        applied = {}
        if chat or (self.chat_template_applied and self.renders_own_chat()):  # the template that reached the model
            try:
                applied["chat_template_sha256"] = _template_sha256(self.selected_chat_template())
            except ConfigError:  # a name it does not have: the evaluation was refused in one line (None, as before)
                applied["chat_template_sha256"] = None

        return {
            "model_num_parameters": sum(p.numel() for p in self.model.parameters()),
            "model_dtype": self.backbone.dtype,
            "tokrag_method": self.METHOD,
            "tokrag_model_fingerprint": self.fingerprint,
            "tokrag_model_files_fingerprint": getattr(self, "files_fingerprint", None),
            "tokrag_model_source": self.backbone.source,
            "tokrag_model_hub_commit": self.backbone.hub_commit,
            "tokrag_model_alias": alias_record(alias, self.backbone.path) if alias else None,
            "tokrag_resolved_config": {**self.recorded_config(), **self.resolved_values(),
                                       "requested_auto": dict(getattr(self, "requested_auto", {})), **applied},
            "tokrag_generation": [dict(g) for g in getattr(self, "generation_used", [])],
            "tokrag_chat_template_applied": chat,
            "tokrag_chat_template_tasks": reached,
            "tokrag_machine": getattr(self, "machine", None),
            "tokrag_cached_responses": getattr(self, "cached_responses", None),
            "tokrag_versions": {**self._library_versions, "tokrag": source["version"], "tokrag_commit": source["commit"],
                                "tokrag_changes": tokrag_changes()},
        }

    def token_text(self, tid: int) -> tuple[str, bool]:
        """``(decoded text, is_special)`` of one token id (cached)."""
        if tid not in self._tok_cache:
            self._tok_cache[tid] = (self.tokenizer.decode([tid]), tid in self._special)
        return self._tok_cache[tid]

    def _attach_trace(self, req: Instance, trace: dict | None) -> None:
        if trace is None or not self.resolved_config["trace"]:
            return
        if getattr(getattr(self, "cache_hook", None), "dbdict", None) is not None:
            return  # lm-eval's response cache keys on the arguments: leave them untouched
        args = tuple(a for a in req.args if not (isinstance(a, dict) and "tokrag_trace" in a))
        req.arguments = (*args, {"tokrag_trace": {"method": self.METHOD, **trace}})

    def response_cache_args(self, attr: str, req: Instance) -> list:
        """What lm-eval's ``--use_cache`` keys the response of ``req`` (an ``attr`` request: ``generate_until``,
        ``loglikelihood``, ``loglikelihood_rolling``) by, hashed with lm-eval's ``hash_args(attr, ...)`` by the patched
        ``CachingLM`` (:func:`tokrag_model._lmeval_hook.patch_caching_lm`) and by this model's cache hook: the request's
        arguments (context and generation kwargs; the text of a rolling request), then ``{"tokrag_model": ...,
        "tokrag_doc": ...}``, the SHA-256 of the method, weights and model-files fingerprints, resolved
        configuration, the source of the code that computes the answers (:func:`answer_code_fingerprint`) and the
        versions of the libraries that compute them (:data:`leaderboards.keys.MODEL_LIBRARIES`), and of
        the whole doc (question, passages with their ids and texts, run fingerprint). lm-eval keyed by the arguments
        alone, whose context holds the passages slot, not the passages: a task that differs only in its passages
        (noise, retriever, counterfactual, ``--metadata``) got another task's answers; without the code an edited
        method read back the old code's answers."""
        n = 1 if attr == "loglikelihood_rolling" else 2
        doc = json.dumps(req.doc, sort_keys=True, default=str, ensure_ascii=False)
        return [*req.args[:n], {"tokrag_model": self._response_cache_model,
                                "tokrag_doc": hashlib.sha256(doc.encode("utf-8")).hexdigest()}]

    @functools.cached_property
    def _library_versions(self) -> dict[str, str | None]:
        """The versions of the libraries that compute this model's answers, read once per instance: ``torch``,
        ``transformers`` (their ``__version__``), ``lm_eval``, then the rest of
        :func:`leaderboards.keys.library_versions` (``tokenizers``, the retrieval engine: ``pyserini``, the
        ``anserini`` jar, the FAISS distribution; ``jinja2``; the metric libraries ``numpy``, ``scipy``,
        ``scikit-learn``, ``rouge-score``, ``rouge``; ``datasets``: the leaderboard run keys' list). Recorded in the results
        (``tokrag_versions``, :meth:`get_model_info`) and part of the ``--use_cache`` key
        (:attr:`_response_cache_model`), so the two name the same versions. None: not installed."""
        import lm_eval
        import transformers

        from leaderboards.keys import library_versions

        own = {"torch": torch.__version__, "transformers": transformers.__version__,
               "lm_eval": getattr(lm_eval, "__version__", "?")}
        return {**own, **{k: v for k, v in library_versions().items() if k not in own}}

    @functools.cached_property
    def _response_cache_model(self) -> str:
        """The model part of :meth:`response_cache_args` (SHA-256 hex), computed once per instance: its inputs are set
        in ``__init__`` and never change after (it was dumped and hashed again for every request, twice for every
        request run). Holds the versions of :data:`leaderboards.keys.MODEL_LIBRARIES` (torch, tokenizers,
        transformers: :attr:`_library_versions`): after an upgrade of one the answers are computed again, not read back
        under the new versions; lm-eval's and the retrieval engine's are recorded, not keyed (the request and the doc's
        passages are keyed themselves). The configuration's ``device`` is keyed by its type (``cpu``, ``cuda``,
        ``mps``), not its ordinal: a process of a ``torchrun``/``accelerate`` run computes on ``cpu:0`` or
        ``cuda:<rank>``, which keyed every cache of one process apart from a data-parallel run's (and each rank's
        apart from another's) for the same answers; ``resolved_config`` still records the device itself. A local
        ``pretrained`` path is keyed as :data:`LOCAL_PRETRAINED` where the weights and files fingerprints cover the
        folder's files (:func:`_keyed_by_files`): ``./m``, ``/abs/m``, ``m/`` and a link to it read one cache, as a
        leaderboard cell's key holds ``local:<fingerprint>`` for it (:func:`leaderboards.keys.keyed_model_args`). A
        ``preset`` file (Tok-RAG) is keyed by the SHA-256 of the content the model read (``sha256:<hex>``, since s61;
        the path as written before): ``./p.json``, ``p.json``, ``/abs/p.json`` and a copy read one cache, an edited
        preset another, as a leaderboard cell's key holds it; ``resolved_config`` still records the path as written."""
        from leaderboards.keys import MODEL_LIBRARIES

        config = dict(self.resolved_config)
        if "device" in config:
            config["device"] = _device_type(config["device"])
        if _keyed_by_files(config.get("pretrained"), getattr(getattr(self, "backbone", None), "path", None)):
            config["pretrained"] = LOCAL_PRETRAINED  # ./m, /abs/m, m/, a link: the fingerprints below are its identity
        preset = getattr(self, "preset", None)  # the file the method read (TokRAGLM.setup), with its content's SHA-256
        if config.get("preset") and isinstance(preset, dict) and isinstance(preset.get("sha256"), str):
            config["preset"] = f"sha256:{preset['sha256']}"  # ./p.json, p.json, /abs/p.json, a copy: one key
        model = json.dumps({"method": self.METHOD, "weights": self.fingerprint,
                            "files": getattr(self, "files_fingerprint", None), "config": config,
                            "code": getattr(self, "code_fingerprint", None) or answer_code_fingerprint(),
                            "libraries": {name: self._library_versions.get(name) for name in MODEL_LIBRARIES}},
                           sort_keys=True, default=str)
        return hashlib.sha256(model.encode("utf-8")).hexdigest()

    def _to_cache(self, attr: str, req: Instance, response: Any) -> None:
        """Give lm-eval's ``--use_cache`` one finished response under :meth:`response_cache_args` (nothing without
        the cache)."""
        hook = getattr(self, "cache_hook", None)
        if getattr(hook, "dbdict", None) is not None:
            hook.add_partial(attr, self.response_cache_args(attr, req), response)

    # ------------------------------------------------------------------ prompts
    def ctxs(self, doc: Any, kind: str | None = None) -> list[dict]:
        """The doc's passages (:func:`tokrag_model.prompt.get_ctxs`, the top ``k``); a doc without any is refused with
        an example task for the request type ``kind`` being served (``generate_until``, ``loglikelihood``,
        ``loglikelihood_rolling``: :func:`tokrag_model.prompt.no_passages_message`; None outside a request, a
        method called directly). Each request entry point passes its type down (:meth:`make_rule`,
        :meth:`score_plan`), never through the model's state: a call inside another (lm-eval's ``--use_cache`` keying
        a request before the model's call, :meth:`response_cache_args`) names its own."""
        k = self.resolved_config["k"]
        if k is not None and isinstance(doc, dict) and isinstance(doc.get("ctxs"), list) and len(doc["ctxs"]) > k:
            cuts = self._cuts
            cuts["attached"] = max(cuts["attached"], len(doc["ctxs"]))  # reported by _report_cuts
        return get_ctxs(doc, self.METHOD, k, kind)

    @property
    def _cuts(self) -> Counter:
        """Passages the model was not shown in the current generate_until/loglikelihood(_rolling) call: ``prompts``
        and ``passages`` dropped for the budget, ``attached`` the most passages a doc had above ``k``."""
        return self.__dict__.setdefault("_cut_counts", Counter())

    def encode_rag(self, doc: Any, context: str, budget: int | None, ctxs: list[dict] | None = None,
                   kind: str | None = None) -> Encoded:
        """The RAG branch's prompt: the doc's passages (or ``ctxs``, e.g. one passage per branch; ``kind``: the
        request type, for :meth:`ctxs`'s refusal) and the task context, within ``budget`` tokens
        (:meth:`tokrag_model.prompt.PromptBuilder.rag`). Every method takes
        its prompts from here and :meth:`encode_pure`, never builds them itself: the passages then go where
        the prompt format puts them (in front of a plain context, inside the first user turn of a chat),
        and the retrieved token span is :attr:`Encoded.span` ``(start, end)``, not a prefix length."""
        ctxs = self.ctxs(doc, kind) if ctxs is None else ctxs
        self._check_slot(context, doc)
        if isinstance(context, WindowContext):
            enc = self._window_rag(ctxs, context, budget)
        else:
            enc = self.prompts.rag(ctxs, context, budget, self.METHOD)
        if enc.kept and enc.span[0] == 1 and context == self.first_window_context():
            # a rolling text's first window: the prefix token then the block, whose span includes that token as a
            # plain prompt's includes its BOS ([0, n_R))
            enc.span = (0, enc.span[1])
        if enc.dropped or enc.cut_here:  # reported once per call of generate_until / loglikelihood(_rolling): _report_cuts
            cuts = self._cuts
            cuts.update(prompts=1, passages=len(enc.dropped))
            cuts.update(("dropped", r) for r in enc.dropped_ranks)
            if enc.cut_here:
                cuts.update([("cut",) + tuple(kept_of) for kept_of in enc.cut.values()])
            elif not enc.kept:
                cuts["closed_book"] += 1
        return enc

    def _window_rag(self, ctxs: list[dict], context: WindowContext, budget: int | None) -> Encoded:
        """The RAG prompt of a later rolling window: the passages block's ids (encoded alone with no BOS, as the pure
        prompt, the window's context ids, has none: lm-eval's ``hf`` convention for later windows) then the window's
        context ids as they are, so the two prompts differ by the block alone; the same budget rule as
        :meth:`tokrag_model.prompt.PromptBuilder.rag` (:meth:`tokrag_model.prompt.PromptBuilder.fit`: within ``budget``
        tokens and the block within ``max_passage_tokens``, counted as a plain prompt's block:
        :meth:`tokrag_model.prompt.PromptBuilder.passage_tokens`; none left: the pure prompt). Span ``(0, n_R)``."""
        limit = self.prompts.max_passage_tokens

        def attempt(kept: list[dict]) -> Encoded | None:
            block = self.prompts.block(kept)
            block_ids = self.prompts.encode_bare(block)
            ids = block_ids + list(context.ids)
            if (budget is None or len(ids) <= budget) and (limit is None or self.prompts.passage_tokens(len(block_ids)) <= limit):
                return Encoded(ids, (0, len(block_ids)), text=block + context)
            return None

        enc = self.prompts.fit(ctxs, attempt)
        if enc is None:
            enc = self.encode_pure(context, budget)
            enc.dropped = [str(c.get("docid", i)) for i, c in enumerate(ctxs)]
            enc.dropped_ranks = list(range(1, len(ctxs) + 1))
        return enc

    def _report_cuts(self) -> None:
        """One WARNING when prompts lost passages to the ``max_length`` budget (or ``max_passage_tokens``, named
        beside it when set) in this call, and one when the
        ``k`` model argument cut the passages a task attached: the model then saw fewer passages than the task's
        ``answer_recall``/``gold_at_k`` count; the per-sample trace's ``passages`` lists those shown."""
        cuts = self.__dict__.pop("_cut_counts", Counter())
        prompts, passages, attached = cuts["prompts"], cuts["passages"], cuts["attached"]
        if attached:
            log.warning("%s: k=%d keeps the top %d of up to %d passages the task attached (its answer_recall/gold_at_k "
                        "count all of them: tasks/README 'Metrics'); to score what the model sees, give the task --metadata "
                        "'{\"hits\": %d}'", self.METHOD, self.resolved_config["k"], self.resolved_config["k"], attached,
                        self.resolved_config["k"])
        if prompts:
            limit = self.prompts.max_passage_tokens  # either bound drops passages: name both when both are set
            fit, raise_ = ((f"max_length={self.max_length}", "max_length") if limit is None else
                           (f"max_length={self.max_length} and max_passage_tokens={limit}",
                            "max_passage_tokens or max_length"))
            ranks = sorted((k[1], n) for k, n in cuts.items() if isinstance(k, tuple) and k[0] == "dropped")
            cut = [(k[1], k[2], n) for k, n in cuts.items() if isinstance(k, tuple) and k[0] == "cut"]
            n_cut, closed = sum(n for *_, n in cut), cuts["closed_book"]
            why = []
            if passages:
                why.append("dropped whole, lowest-ranked first, where the passages ranked above left no room" +
                           (f", and every passage of {closed} prompt(s) with no room for even the first token of the top "
                            "passage (answered closed-book)" if closed else "") +
                           "; ranks dropped (prompts): " + ", ".join(f"{r} ({n})" for r, n in ranks))
            if cut:
                kept, total = {k for k, _, _ in cut}, {t for _, t, _ in cut}
                span = (lambda v: str(min(v)) if len(v) == 1 else f"{min(v)}-{max(v)}")
                room = "the room the question left" if limit is None else "max_passage_tokens or the room the question left"
                why.append(f"cut token-wise from its end where the top passage alone was longer than {room}: rank 1 "
                           f"({n_cut}), {span(kept)} of its {span(total)} tokens kept")
            lost = (f"{passages} passage(s) dropped " + (f"and {n_cut} cut " if n_cut else "")) if passages else \
                f"{n_cut} passage(s) cut "
            log.warning("%s: %sfrom %d prompt(s) to fit %s (%s; the trace's 'passages' lists those shown%s; "
                        "answer_recall/gold_at_k still count them): raise %s", self.METHOD, lost, prompts, fit,
                        "; ".join(why), " and 'cut' [tokens kept, tokens] of a cut one" if n_cut else "", raise_)

    def _check_slot(self, context: str, doc: Any = None) -> None:
        """Refuse a context holding :data:`tokrag_model.prompt.PASSAGES_SLOT` where the model did not put it
        (:func:`tokrag_model.prompt.check_slot`): more than once, or at all in a plain-prompt evaluation's context
        (:attr:`plain_contexts`) other than a rolling text's first window (:meth:`first_window_context`). A later
        rolling window (:class:`WindowContext`) is built from its ids, never from a slot: not checked. Outside an
        evaluation (:attr:`plain_contexts` None: a method called directly in Python) one marker is where the passages
        go, by design: the context may be a chat another model object rendered (:meth:`apply_chat_template`), which
        holds that object's marker, and it cannot be told from a caller's own; call :meth:`start_evaluation` first
        (``apply_chat_template=False``) to have a plain context's marker refused.

        Raises:
            ConfigError: one line naming the method, the doc's ``qid`` (or ``id``) and the text around the marker.
        """
        if isinstance(context, WindowContext) or PASSAGES_SLOT not in context:
            return
        plain = getattr(self, "plain_contexts", None) is True and context != self.first_window_context()
        qid = next((doc[k] for k in ("qid", "id") if k in doc), None) if isinstance(doc, dict) else None
        check_slot(context, plain, self.METHOD, "" if qid is None else f"doc {qid!r}")

    def encode_pure(self, context: str, budget: int | None) -> Encoded:
        """The pure (closed-book) branch's prompt: the task context alone (a chat's passages slot removed; a later
        rolling window's :class:`WindowContext` ids as they are), within ``budget`` tokens.

        Raises:
            ConfigError: the context alone is longer than ``budget`` tokens, or holds the passages slot where the model
                did not put it (:meth:`_check_slot`).
        """
        self._check_slot(context)
        if isinstance(context, WindowContext):
            if budget is not None and len(context.ids) > budget:
                raise ConfigError(f"--model {self.METHOD}: a rolling window's context is {len(context.ids)} tokens but only "
                                  f"{budget} fit: raise max_length=")
            return Encoded(list(context.ids), (0, 0), text=str(context))
        return self.prompts.pure(context, budget, self.METHOD)

    def encode_per_passage(self, doc: Any, context: str, budget: int | None, kind: str | None = None
                           ) -> tuple[list[Encoded], list[dict], list[str]]:
        """One RAG prompt per passage (passage + task context; REPLUG-style branches) over the passages every other
        method shows: the kept set is chosen once per request by :meth:`encode_rag`'s block rule (the whole
        passages block within ``budget`` tokens and ``max_passage_tokens``, lowest-ranked dropped first, the top
        passage cut when it alone does not fit: :meth:`tokrag_model.prompt.PromptBuilder.fit`), so a per-passage
        method never sees a passage that ``rag-standard``, ``tokrag`` or CAD dropped, and sees a cut one as they do.

        Returns:
            ``(prompts, passages, dropped)``: one prompt per kept passage and those passages, best first (both
            empty when none fits: the caller then answers closed-book with :meth:`encode_pure`), and the docids
            dropped for the budget (the trace's ``dropped``, as :meth:`encode_rag`'s :attr:`Encoded.dropped`).
        """
        kept, dropped = self.fitting_passages(doc, context, budget, kind)
        encs, ctxs = self.encode_each(doc, context, budget, kept)
        return encs, ctxs, dropped

    def encode_each(self, doc: Any, context: str, budget: int | None, ctxs: list[dict]) -> tuple[list[Encoded], list[dict]]:
        """``(prompts, passages)``: one RAG prompt per passage of ``ctxs`` (that passage + the task context within
        ``budget`` tokens) and those passages, in order, leaving out a passage whose prompt shows none. ``ctxs`` from
        :meth:`fitting_passages` (or a subset): one passage of a block that fits always fits, so none is left out."""
        encs = [self.encode_rag(doc, context, budget, ctxs=[c]) for c in ctxs]
        keep = [i for i, e in enumerate(encs) if e.kept]  # one passage's prompt is never longer than the block's
        return [encs[i] for i in keep], [ctxs[i] for i in keep]

    def per_passage_branches(self, doc: Any, context: str, budget: int | None, kind: str | None = None
                             ) -> tuple[list[Encoded], list[dict], dict]:
        """:meth:`encode_per_passage` with the closed-book fallback of the per-passage methods (REPLUG, the entropy
        ensemble): ``(prompts, passages, trace)``, trace ``{"passages": docids shown, "dropped": docids dropped for
        the budget}``; when no passage fits, the prompts are :meth:`encode_pure`'s alone, passages ``[]`` and the
        trace ``{"passages": [], "dropped": ..., "closed_book": True}``.

        Raises:
            ConfigError: no passage fits and the context alone is longer than ``budget`` tokens (:meth:`encode_pure`).
        """
        encs, ctxs, dropped = self.encode_per_passage(doc, context, budget, kind)
        if not encs:
            return [self.encode_pure(context, budget)], [], {"passages": [], "dropped": dropped, "closed_book": True}
        trace = {"passages": [e.kept[0] for e in encs], "dropped": dropped}
        cut = cuts_of(ctxs, trace["passages"])
        return encs, ctxs, {**trace, "cut": cut} if cut else trace

    def fitting_passages(self, doc: Any, context: str, budget: int | None, kind: str | None = None
                         ) -> tuple[list[dict], list[str]]:
        """``(passages, dropped docids)``: the doc's passages that ``rag-standard``'s prompt shows within ``budget``
        tokens (:meth:`encode_rag`'s block rule: the whole block within ``budget`` and ``max_passage_tokens``,
        lowest-ranked dropped first, the top passage cut token-wise when it alone does not fit, as its cut copy:
        :meth:`tokrag_model.prompt.PromptBuilder.fit`; best first, empty when none fits) and the docids it drops (the trace's
        ``dropped``). The pool of the methods that pick among passages (per-passage branches:
        :meth:`encode_per_passage`; the filter's critic), so none shows a passage another method dropped. A dropped
        passage is counted once for the call's warning (:meth:`_report_cuts`). ``kind``: the request type
        (:meth:`ctxs`)."""
        ctxs = self.ctxs(doc, kind)
        if not ctxs:
            return [], []
        whole = self.encode_rag(doc, context, budget, ctxs=ctxs)
        return list(whole.shown), list(whole.dropped)  # a head of the ranked passages, or the top one cut

    # ------------------------------------------------------------------ method hooks
    def make_rule(self, doc: Any, context: str, budget: int, kind: str = "generate_until") -> tuple[Any, dict]:
        """Return ``(rule, trace)`` for one generation request (``kind``, passed on to :meth:`ctxs`: always
        ``generate_until``)."""
        raise NotImplementedError

    def finish_trace(self, rule: Any, trace: dict) -> dict:
        return trace

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int, kind: str | None = None) -> ScorePlan:
        """The :class:`ScorePlan` of continuation token ids ``cont`` after ``context`` (prompt budget ``budget``
        tokens, continuation included; :func:`budget_check`) for a ``kind`` request (``loglikelihood`` or
        ``loglikelihood_rolling``, passed on to :meth:`ctxs`; None: a method called directly)."""
        raise NotImplementedError

    def score(self, doc: Any, context: str, cont_text: str, budget: int, cont_override: list[int] | None = None,
              kind: str | None = None) -> tuple[float, bool, dict]:
        """Teacher-forced ``(log-likelihood in nats, is_greedy, trace)`` of ``cont_text`` (or of the token ids
        ``cont_override``) after ``context``: one request (of type ``kind``) through :meth:`score_plan`."""
        cont = cont_override if cont_override is not None else self.cont_ids(context, cont_text)
        plan = self.score_plan(doc, context, cont, budget, **self._plan_kind(kind))
        return plan.finish(self.decoder.teacher_force(plan.forcings()))

    def _plan_kind(self, kind: str | None) -> dict[str, str | None]:
        """``{"kind": kind}`` for :meth:`score_plan`, or ``{}`` for a method's ``score_plan(doc, context, cont, budget)``
        written to the contract before it took the request type (as :meth:`make_rule` keeps its three-argument form):
        that method still scores, and a doc without passages it gives :meth:`encode_rag` is refused with the generation
        example, as in a direct call."""
        params = inspect.signature(self.score_plan).parameters
        takes = "kind" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        return {"kind": kind} if takes else {}

    # ------------------------------------------------------------------ lm-eval API
    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        """Greedy generation for each request (``until``, ``max_gen_toks``, EOS honoured): one :meth:`make_rule`
        rule per request, decoded by :meth:`_generate_batched`.

        Requests are grouped by generation kwargs and sorted by their longest branch prompt (lm-eval's
        ``Collator``), ``batch_size`` requests decoded together; outputs in the original order.
        """
        def make(req: Instance, budget: int) -> tuple[list[Any], dict]:
            rule, trace = self.make_rule(req.doc, req.args[0], budget)  # kind: make_rule's, generate_until
            return [rule], trace

        def finish(req: Instance, trace: dict, rules: list[Any], toks: list[list[int]], texts: list[str],
                   reasons: list[str]) -> tuple[str, dict | None]:
            return texts[0], self.finish_trace(rules[0], trace)

        return self._generate_batched(requests, disable_tqdm, make, finish)

    def _generate_batched(self, requests: list[Instance], disable_tqdm: bool,
                          make: Callable[[Instance, int], tuple[list[Any], Any]],
                          finish: Callable[[Instance, Any, list[Any], list[list[int]], list[str], list[str]],
                                           tuple[str, dict | None]]
                          ) -> list[str]:
        """The batched greedy generation loop of every ``generate_until`` (the base's one rule per request,
        REPLUG ``answer_vote``'s and Self-RAG filter ``selection=rank``'s one answer per passage).

        ``make(req, budget)`` returns one request's rules (each an independent rule of
        :func:`tokrag_model.decoder.generate`, decoded as its own row(s)) and a state handed back to ``finish``;
        ``budget`` is the request's prompt budget in tokens (:meth:`_gen_settings`). ``finish(req, state, rules, toks,
        texts)`` gets the rules after decoding, their generated token ids (one list per rule, EOS / stop string
        included) and their texts (decoded without special tokens and cut at the stop strings, as lm-eval's ``hf``
        cuts a generation) and ``reasons``, why each rule's generation stopped
        (:data:`~tokrag_model.decoder.STOP_REASONS`: ``stop``, ``eos``, ``budget``), and returns ``(text returned,
        trace)`` (a None trace attaches none). The trace of a one-rule request gets its rule's ``stop_reason``; a
        ``finish`` that picks one of several rules records the returned one's ``stop_reason`` itself.

        Requests are grouped by generation kwargs and sorted by their longest rule row (lm-eval's ``Collator``),
        ``batch_size`` requests (all their rules) per :func:`~tokrag_model.decoder.generate` call. With
        ``trace_prompts`` the trace gets ``prompts``: every rule's rows decoded before decoding. Each text goes to
        the cache hook as it finishes; passages cut for the budget are reported once per call
        (:meth:`_report_cuts`). Returns the texts in the original order.

        Raises:
            ConfigError: a context holding the passages slot where the model did not put it (:meth:`_check_slot`,
            every request's before any prompt is built), from :meth:`_gen_settings` (a generation setting the method
            would not honour, ``max_gen_toks`` leaves no prompt room, or a ``max_gen_toks`` model argument the task
            overrides), or from ``make``.
        """
        if not requests:
            return []
        for req in requests:
            self._check_slot(req.args[0], req.doc)
        self.__dict__.pop("_cut_counts", None)  # counted per call (token_scores and failed calls never report)
        eos_text = self.tokenizer.decode([self.eot_token_id], skip_special_tokens=False)
        keys = [json.dumps(req.args[1], sort_keys=True, default=str) for req in requests]
        tasks = {key: getattr(req, "task_name", None) for key, req in reversed(list(zip(keys, requests)))}  # first's
        settings = {key: self._gen_settings(json.loads(key), eos_text, tasks[key]) for key in dict.fromkeys(keys)}
        # every task of each group: lm-eval sends all tasks' requests in one call; two tasks may share gen kwargs
        self._note_generation(settings, dict.fromkeys((getattr(req, "task_name", None), key)
                                                      for key, req in zip(keys, requests)))
        made = [make(req, settings[key][2])
                for req, key in zip(tqdm(requests, disable=disable_tqdm or len(requests) < 2, desc=f"{self.METHOD} prompts"), keys)]
        longest = [max(len(r) for rule in rules for r in rule.rows()) for rules, _ in made]
        trace_prompts = self.resolved_config["trace_prompts"]
        prompts = ([[self.tokenizer.decode(r, skip_special_tokens=False) for rule in rules for r in rule.rows()]
                    for rules, _ in made] if trace_prompts else None)  # before decoding: rows() are the prompts
        coll = Collator([(i, keys[i]) for i in range(len(requests))], sort_fn=lambda x: (-longest[x[0]], x[0]),
                        group_fn=lambda x: {"gen_kwargs": x[1]}, group_by="gen_kwargs")
        results: list[str] = []
        pbar = tqdm(total=len(requests), disable=disable_tqdm, desc=f"{self.METHOD} generate_until")
        for chunk in coll.get_batched(n=self.batch_size):
            idxs = [i for i, _ in chunk]
            until, max_gen, _ = settings[chunk[0][1]]
            reasons: list[str] = []
            outs = generate(self.decoder, self.tokenizer, [rule for i in idxs for rule in made[i][0]], until, max_gen,
                            self.eos_ids, reasons=reasons)
            at = 0
            for i in idxs:
                rules, state = made[i]
                toks, why, at = outs[at:at + len(rules)], reasons[at:at + len(rules)], at + len(rules)
                texts = [postprocess_generated_text(self.tokenizer.decode(t, skip_special_tokens=True), until, None)
                         for t in toks]
                text, trace = finish(requests[i], state, rules, toks, texts, why)
                if trace is not None and len(rules) == 1 and "stop_reason" not in trace:
                    trace = {**trace, "stop_reason": why[0]}
                results.append(text)
                if trace_prompts and trace is not None:
                    trace = {**trace, "prompts": prompts[i]}
                self._attach_trace(requests[i], trace)
                self._to_cache("generate_until", requests[i], text)
            pbar.update(len(idxs))
        pbar.close()
        self._report_cuts()
        return coll.get_original(results)

    def _note_generation(self, settings: dict[str, tuple[list[str], int, int]],
                         groups: Iterable[tuple[str | None, str]]) -> None:
        """Add to :attr:`generation_used` (the results' ``tokrag_generation``) each task's generation-kwargs group
        (``groups``: ``(task, gen-kwargs key of settings)``, in request order) of one ``generate_until`` call not yet
        listed, one entry per task even where tasks share their kwargs (lm-eval sends every task's requests in one
        call): ``task``, ``gen_kwargs`` (as requested), and as decoded ``until`` (the
        stop strings, lm-eval's EOS text added), ``max_gen_toks`` and ``do_sample`` (false: every method is greedy;
        :meth:`_gen_settings` refuses sampling)."""
        used = getattr(self, "generation_used", None)
        if used is None:
            used = self.generation_used = []
        for task, key in groups:
            until, max_gen, _ = settings[key]
            entry = {"task": task, "gen_kwargs": json.loads(key), "until": list(until), "max_gen_toks": max_gen,
                     "do_sample": False}
            if entry not in used:
                used.append(entry)

    def _gen_settings(self, gen_kwargs: dict, eos_text: str, task: str | None = None) -> tuple[list[str], int, int]:
        """``(stop strings, max_gen_toks, prompt budget in tokens)`` of one generation-kwargs group (of task ``task``,
        named in errors), read as lm-eval's ``hf`` reads them (``normalize_gen_kwargs``: ``max_new_tokens``,
        ``max_tokens`` and ``max_completion_tokens`` are ``max_gen_toks``; default the ``max_gen_toks`` model
        argument).

        Raises:
            ConfigError: a setting the method would not honour (:func:`unhonoured_gen_kwargs`: sampling, beams,
            ``repetition_penalty``, ...: the results would record it, the answers are greedy); a budget or temperature
            that is not a number; a value lm-eval would read with another meaning (:func:`check_gen_kwarg_values`:
            ``temperature=nan``, an empty ``until``, ``max_gen_toks=0``); ``max_gen_toks`` leaves no room in
            ``max_length``; a ``max_gen_toks`` model argument
            given explicitly that the task's generation_kwargs override (as in lm-eval's ``hf``, the request's value
            wins: the run would use another budget than the one given and recorded).
        """
        where = f"task {task}'s generation kwargs" if task else "the request's generation kwargs"
        try:
            bad = unhonoured_gen_kwargs(gen_kwargs)
            norm = normalize_gen_kwargs(gen_kwargs, self.resolved_config["max_gen_toks"])
        except GenKwargsValueError as exc:
            raise ConfigError(f"--model {self.METHOD}: {where}: {exc} (--gen_kwargs or the task's "
                              "generation_kwargs)") from None
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"--model {self.METHOD}: {where} {gen_kwargs!r} cannot be read ({exc}); the budget "
                              "(max_gen_toks) must be an integer and temperature a number") from None
        if bad:
            raise ConfigError(f"--model {self.METHOD}: {where} set {', '.join(f'{k}={gen_kwargs[k]!r}' for k in bad)}, "
                              f"which it would not honour: every tokrag method decodes greedily and reads only "
                              f"{GEN_KWARGS_READ}, so the results would record settings that did not act; drop "
                              f"{'/'.join(bad)} (--gen_kwargs or the task's generation_kwargs)")
        until = handle_stop_sequences(gen_kwargs.get("until"), eos=eos_text)
        max_gen = norm["max_gen_toks"]
        if self.given_args.get("max_gen_toks") is not None and max_gen != self.resolved_config["max_gen_toks"]:
            raise ConfigError(f"--model {self.METHOD}: max_gen_toks={self.resolved_config['max_gen_toks']} (model argument) has "
                              f"no effect: the task's generation_kwargs set max_gen_toks={max_gen}, which win as in lm-eval's hf; "
                              f"pass --gen_kwargs max_gen_toks={self.resolved_config['max_gen_toks']} instead")
        budget = self.max_length - max_gen
        if budget <= 0:
            raise ConfigError(f"--model {self.METHOD}: max_gen_toks={max_gen} leaves no room in max_length={self.max_length}")
        return until, max_gen, budget

    def split_context(self, context: str, continuation: str) -> tuple[str, str]:
        """lm-eval's scoring convention: the context's trailing whitespace moves to the front of the continuation
        (``hf``'s ``_encode_pair``); an empty context becomes :meth:`first_window_context` (lm-eval's prefix token,
        :attr:`rolling_prefix_token_id`, as ``TemplateLM.loglikelihood`` conditions on ``[prefix_token_id]``, then the
        passages slot: a RAG prompt is ``prefix token, passages block, continuation``, as a rolling first window), and
        :meth:`cont_ids` then gives the continuation's own tokens, no special token added (``hf``'s
        ``tok_encode(continuation, add_special_tokens=False)``)."""
        if not context:
            return self.first_window_context(), continuation
        n = len(context) - len(context.rstrip())
        if n:
            continuation = context[-n:] + continuation
            context = context[:-n]
        return context, continuation

    def cont_ids(self, context: str, continuation: str) -> list[int]:
        """Continuation tokens as lm-eval's TemplateLM splits them (whole string minus context tokens; after the
        empty context's :meth:`first_window_context`, the continuation's own tokens less a leading prefix token,
        which ``TemplateLM.loglikelihood`` moves into the context)."""
        first = context == self.first_window_context()
        context = without_slot(context)
        whole = self.prompts.encode(context + continuation)
        ctx = self.prompts.encode(context)
        cont = whole[len(ctx):]
        if first and cont[:1] == [self.rolling_prefix_token_id]:
            cont = cont[1:]
        return cont

    def request_cont_ids(self, req: Instance) -> tuple[str, list[int]]:
        """``(context, continuation token ids)`` of one ``loglikelihood`` request (:meth:`split_context`, then
        :meth:`cont_ids`): the one place every method's requests are split.

        Raises:
            ConfigError: the continuation has no token (e.g. an empty multiple-choice option): its log-likelihood would
                be 0 (probability 1, so it always wins), or the scoring crashed; lm-eval's ``hf`` refuses it too
                (``assert len(continuation_enc) > 0``). One line naming the task, doc and the context's tail.
        """
        context, continuation = self.split_context(req.args[0], req.args[1])
        self._check_slot(context, req.doc)
        cont = self.cont_ids(context, continuation)
        if not cont:
            doc = req.doc if isinstance(req.doc, dict) else {}
            where = ", ".join(f"{k} {v!r}" for k, v in (("task", getattr(req, "task_name", None)),
                                                         ("doc_id", getattr(req, "doc_id", None)),
                                                         ("qid", doc.get("qid"))) if v is not None)
            raise ConfigError(f"--model {self.METHOD}: a loglikelihood request{' (' + where + ')' if where else ''} has "
                              f"an empty continuation {req.args[1]!r} after the context ...{req.args[0][-60:]!r}: it "
                              "has no token to score (lm-eval's hf refuses it too); fix the task's choices / targets")
        return context, cont

    def loglikelihood(self, requests: list[Instance], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        """``(sum of log-probs in nats, is_greedy)`` of each continuation, teacher-forced per method, batched
        (:meth:`score_many`).

        Raises:
            ConfigError: a request with an empty continuation (:meth:`request_cont_ids`), before any forward pass.
        """
        self.__dict__.pop("_cut_counts", None)  # counted per call
        items = [(req.doc, *self.request_cont_ids(req)) for req in requests]
        def done(i: int, result: tuple[float, bool, dict]) -> None:  # cached as it finishes (--use_cache resumes)
            self._to_cache("loglikelihood", requests[i], (LogLikelihood(result[0], len(items[i][2])), result[1]))

        out = []
        for req, (_, _, cont), (ll, greedy, trace) in zip(
                requests, items, self.score_many(items, "loglikelihood", disable_tqdm, on_done=done)):
            out.append((LogLikelihood(ll, len(cont)), greedy))
            self._attach_trace(req, trace)
        self._report_cuts()
        return out

    @property
    def rolling_prefix_token_id(self) -> int:
        """The token in front of a rolling text's first window: the tokenizer's BOS, else the EOT token
        (lm-eval's ``hf`` ``prefix_token_id``)."""
        return rolling_prefix_token_id(self.tokenizer)

    def first_window_context(self) -> str:
        """The context text of a rolling text's first window: the prefix token's text (:attr:`rolling_prefix_token_id`)
        followed by the passages slot, so a RAG prompt is ``prefix token, passages block, text`` (one BOS, at the
        start) and the pure prompt is the prefix token alone, as lm-eval's ``hf`` scores the first window."""
        return first_window_text(self.tokenizer) + PASSAGES_SLOT

    def loglikelihood_rolling(self, requests: list[Instance], disable_tqdm: bool = False) -> list[float]:
        """Sum of log-probs (nats) of a whole string, scored in disjoint windows (lm-eval's rolling scheme).

        Each window is scored like a ``loglikelihood`` continuation after its preceding tokens: a later window's
        context is a :class:`WindowContext` (its text for the methods, its token ids for the prompts: the pure prompt
        is the window's context ids as lm-eval's ``hf`` scores them, a RAG prompt the passages block's ids in front of
        them), so the method's passages precede every window; the window length leaves room for the passages
        (``max_length // 2`` tokens of text per window). The first window's context is lm-eval's prefix token (:attr:`rolling_prefix_token_id`): the pure
        prompt is that token alone (lm-eval's ``hf``), a RAG prompt is that token, then the passages block, then
        the text (:meth:`first_window_context`; never the block in front of the prefix token). The windows of all
        requests are batched together (:meth:`score_many`).
        """
        from lm_eval import utils

        self.__dict__.pop("_cut_counts", None)  # counted per call
        items, owner = [], []
        prefix = self.rolling_prefix_token_id
        first = self.first_window_context()
        for r, req in enumerate(requests):
            (string,) = req.args[:1]
            windows = map(utils.make_disjoint_window, utils.get_rolling_token_windows(
                token_list=self.prompts.encode(string), prefix_token=prefix, max_seq_len=max(16, self.max_length // 2),
                context_len=1))
            for w, (ctx_toks, pred_toks) in enumerate(windows):
                ctx = first if w == 0 else WindowContext(self.tokenizer.decode(ctx_toks, skip_special_tokens=False), ctx_toks)
                items.append((req.doc, ctx, list(pred_toks)))
                owner.append(r)
        windows_of: list[list[int]] = [[] for _ in requests]
        for i, r in enumerate(owner):
            windows_of[r].append(i)
        left = [len(w) for w in windows_of]
        lls: dict[int, float] = {}

        def total(r: int) -> float:  # summed in window order, whatever order the windows were scored in
            t = 0.0
            for i in windows_of[r]:
                t += lls[i]
            return t

        def done(i: int, result: tuple[float, bool, dict]) -> None:  # a document is cached once its last window is
            lls[i] = result[0]
            left[owner[i]] -= 1
            if not left[owner[i]]:
                self._to_cache("loglikelihood_rolling", requests[owner[i]], total(owner[i]))

        results = self.score_many(items, "loglikelihood_rolling", disable_tqdm, on_done=done)
        totals = [total(r) for r in range(len(requests))]
        for req, w in zip(requests, windows_of):
            self._attach_trace(req, self.rolling_trace([results[i][2] for i in w]))
        self._report_cuts()
        return totals

    def rolling_trace(self, windows: list[dict]) -> dict:
        """The trace of one ``loglikelihood_rolling`` text from its windows' traces (in order): ``{"windows": [...]}``.
        A method adds per-text fields the leaderboard reads at the trace's top level (:mod:`leaderboards.traces`)."""
        return {"windows": windows}

    def score_many(self, items: list[tuple[Any, str, list[int]]], kind: str | None = None, disable_tqdm: bool = False,
                   on_done: Callable[[int, tuple[float, bool, dict]], None] | None = None) -> list[tuple[float, bool, dict]]:
        """Score ``(doc, context, continuation token ids)`` items of ``kind`` requests (``loglikelihood`` or
        ``loglikelihood_rolling``: named in the progress bar and passed to each :meth:`score_plan`; None: ``score``
        in the bar): one :meth:`score_plan` each, sorted by
        the tokens they teacher-force (lm-eval's ``Collator``, longest first), at most ``batch_size`` plans
        per teacher-forced pass (fewer where :meth:`MultiContextDecoder.teacher_force` splits them);
        ``(log-likelihood in nats, is_greedy, trace)`` in the original order. ``on_done(index, result)`` is called
        for each item as soon as its pass is done (the callers give lm-eval's ``--use_cache`` each finished request
        then, so an interrupted run keeps them, as ``hf`` does)."""
        how = self._plan_kind(kind)
        plans = [self.score_plan(doc, context, cont, self.max_length, **how)
                 for doc, context, cont in tqdm(items, disable=disable_tqdm or len(items) < 2, desc=f"{self.METHOD} prompts")]
        coll = Collator(list(range(len(plans))), sort_fn=lambda i: (-plans[i].n_tokens, i))
        out = []
        pbar = tqdm(total=len(plans), disable=disable_tqdm, desc=f"{self.METHOD} {kind or 'score'}")
        for chunk in coll.get_batched(n=self.batch_size):
            forced = self.decoder.teacher_force([f for i in chunk for f in plans[i].forcings()])
            at = 0
            for i in chunk:
                n = len(plans[i].prompts)
                out.append(plans[i].finish(forced[at:at + n]))
                if on_done is not None:
                    on_done(i, out[-1])
                at += n
            pbar.update(len(chunk))
        pbar.close()
        return coll.get_original(out)

    # shared scoring helpers
    def _sum_ll(self, lp: torch.Tensor, cont: list[int]) -> tuple[float, bool]:
        idx = torch.tensor(cont, device=lp.device)  # on lp's device: a CPU index against CUDA log-probs fails below
        ll = float(lp[torch.arange(len(cont), device=lp.device), idx].double().sum())
        greedy = bool((lp.argmax(-1) == idx).all())
        return ll, greedy


def passages_trace(enc: Encoded, dropped: list[str] | None = None) -> dict:
    """The trace's record of the passages a RAG prompt ``enc`` shows: ``passages`` (its docids, best first), ``dropped``
    (``dropped``, default the docids ``enc`` dropped for the budget) and, only where one was cut token-wise to the budget
    (:meth:`tokrag_model.prompt.PromptBuilder.fit`), ``cut``: ``{docid: [tokens kept, tokens]}``."""
    trace = {"passages": enc.kept, "dropped": enc.dropped if dropped is None else dropped}
    return {**trace, "cut": enc.cut} if enc.cut else trace


def budget_check(cont: list[int], budget: int, method: str) -> int:
    """Prompt budget (tokens) left once the continuation ``cont`` is reserved from ``budget``.

    Raises:
        ConfigError: the continuation alone fills ``budget`` (a one-line error naming ``max_length``).
    """
    if len(cont) >= budget:
        raise ConfigError(f"--model {method}: the continuation is {len(cont)} tokens, max_length={budget}: raise max_length=")
    return budget - len(cont)


class SingleBranch:
    """Greedy decoding of one branch (``rag-none``: pure prompt; ``rag-standard``/filter: RAG prompt).

    The rule protocol of :func:`tokrag_model.decoder.generate`: ``rows()`` = the request's branch prompts,
    ``choose()`` = the next token from the batch's next-token log-probs at those rows.
    """

    needs_hidden = False
    records_logprobs = False  # a lone row keeps MKL's one-row kernel (tokrag_model.decoder.Rule)

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids

    def rows(self) -> list[list[int]]:
        return [self.ids]

    def choose(self, dec: MultiContextDecoder, batch: Batch, rows: list[int], step: int) -> int:
        return int(batch.logprobs[rows[0]].argmax())


class ScoredBranch(SingleBranch):
    """:class:`SingleBranch` greedy decoding that also records the log-prob (nats) of every token it picks, the EOS
    that ends it included (``logprobs``): REPLUG ``answer_vote``
    (:func:`~tokrag_model.methods.replug.answer_mean_logprob`) and Self-RAG filter ``selection=rank`` (:meth:`~tokrag_model.methods.selfrag_filter.SelfRAGFilterLM.answer_prob`)
    average them. Each is one of its request's candidate answers (``candidate``, :class:`tokrag_model.decoder.Rule`):
    its tokens count in ``branch_tokens``, and the method adds the returned one's to ``generated_tokens``. It records
    its log-probs (``records_logprobs``, :class:`tokrag_model.decoder.Rule`): with batch invariance a lone row of it
    decodes on the row-invariant products, so the recorded numbers are the same at every batch size."""

    candidate = True
    records_logprobs = True

    def __init__(self, ids: list[int]) -> None:
        super().__init__(ids)
        self.logprobs: list[float] = []

    def choose(self, dec: MultiContextDecoder, batch: Batch, rows: list[int], step: int) -> int:
        lp = batch.logprobs[rows[0]]
        tok = int(lp.argmax())
        self.logprobs.append(float(lp[tok]))
        return tok


def branch_logprobs(dec: MultiContextDecoder, prompt: list[int], cont: list[int], hidden: bool = False
                    ) -> tuple[torch.Tensor, torch.Tensor | None, list[torch.Tensor] | None]:
    """Teacher-forced outputs of one branch at the continuation positions (a one-item
    :meth:`tokrag_model.decoder.MultiContextDecoder.teacher_force`, for tests and tools; methods score
    through :class:`ScorePlan`, batched).

    Returns:
        lp (C, V) float32 where ``lp[i]`` is the distribution that predicts ``cont[i]``; hidden
        (L+1, C, d) at the same query positions (or None); every layer's keys of ``prompt + cont``.
    """
    (f,) = dec.teacher_force([Forcing(prompt, cont, hidden=hidden, keys=True)])
    return f.logprobs, f.hidden, f.keys


class SingleBranchLM(RAGMethodLM):
    """Shared code of ``rag-none`` and ``rag-standard``: one branch, plain greedy decoding / scoring."""

    def branch(self, doc: Any, context: str, budget: int, kind: str | None = None) -> Encoded:
        raise NotImplementedError

    def make_rule(self, doc: Any, context: str, budget: int, kind: str = "generate_until") -> tuple[Any, dict]:
        enc = self.branch(doc, context, budget, kind)
        return SingleBranch(enc.ids), self._enc_trace(enc)

    def _enc_trace(self, enc: Encoded) -> dict:
        return passages_trace(enc) if self.USES_PASSAGES else {}

    def score_plan(self, doc: Any, context: str, cont: list[int], budget: int, kind: str | None = None) -> ScorePlan:
        enc = self.branch(doc, context, budget_check(cont, budget, self.METHOD), kind)

        def finish(forced: list[Forced]) -> tuple[float, bool, dict]:
            ll, greedy = self._sum_ll(forced[0].logprobs, cont)
            return ll, greedy, self._enc_trace(enc)

        return ScorePlan([enc.ids], cont, finish)
