"""s57 r6 (review of g1's c026632): ``tokrag_model.loading.converter_key`` (part of a packaged alias's converted
folder name and of its cells' model fingerprint) hashed ``inspect.getsource(_convert_gguf)`` as text: a docstring or
comment edit of ``_convert_gguf`` converted SmolLM2 and Gemma again and re-keyed every alias cell. It now hashes
``retrieval.io.normalised_source`` of that source (dedented), as the run keys hash a ``.py`` file since g1.

The edits are made by position (``ast``), not by matching lines of the live file.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
import textwrap

import pytest
from test_s57_r6_records_code_key import _docstring_edit, _insert


@pytest.fixture
def converter_with(tmp_path, monkeypatch):
    """A function giving ``converter_key()`` (not memoised) with ``_convert_gguf`` replaced by the function of that
    name defined by the given module text (imported from a file, so ``inspect.getsource`` reads it)."""
    from tokrag_model import loading

    made = []

    def key_of(text: str, attr: str = "_convert_gguf") -> str:
        name = f"s57_r6_converter_{len(made)}"
        path = tmp_path / f"{name}.py"
        path.write_text("from __future__ import annotations\n" + text, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # inspect.getsource finds the file through the module
        made.append(name)
        spec.loader.exec_module(module)
        func = module
        for part in attr.split("."):
            func = getattr(func, part)
        monkeypatch.setattr(loading, "_convert_gguf", func)
        return loading.converter_key.__wrapped__()

    yield key_of, inspect.getsource(loading._convert_gguf)
    for name in made:
        sys.modules.pop(name, None)
    loading.converter_key.cache_clear()


def test_the_converter_key_of_an_unchanged_converter_is_the_real_one(converter_with) -> None:
    from tokrag_model import loading

    key_of, source = converter_with
    real = loading.converter_key.__wrapped__()
    assert len(real) == 8 and int(real, 16) >= 0
    assert key_of(source) == real  # the same code from another file: the same key (no path, no line number in it)


def test_a_docstring_or_comment_edit_of_the_converter_keeps_the_converter_key(converter_with) -> None:
    key_of, source = converter_with
    base = key_of(source)
    assert key_of(_docstring_edit(source)) == base  # was a new key: SmolLM2 and Gemma converted again
    body = ast.parse(source).body[0].body
    assert len(body) > 3
    assert key_of(_insert(source, body[2].lineno, 0, "    # a comment added by s57 r6\n\n")) == base


def test_a_code_edit_of_the_converter_changes_the_converter_key(converter_with) -> None:
    key_of, source = converter_with
    base = key_of(source)
    body = ast.parse(source).body[0].body
    assert key_of(_insert(source, body[-1].lineno, 0, "    edited = 1\n")) != base
    # a string used as a value is code, not a docstring
    assert key_of(_insert(source, body[-1].lineno, 0, "    log.info('converted by s57 r6')\n")) != base


def test_an_indented_converter_is_keyed_by_its_code(converter_with) -> None:
    """``inspect.getsource`` of a function defined in a class or a block keeps its indentation: it is dedented before
    it is parsed (a bare ``ast.parse`` raises IndentationError), so its key is that of the same code at top level."""
    key_of, source = converter_with
    base = key_of(source)
    assert key_of("class Holder:\n" + textwrap.indent(source, "    "), "Holder._convert_gguf") == base
