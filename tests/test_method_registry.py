"""The method registry (``tokrag_model.methods.METHODS``) and what a new method's line must satisfy.

A new-user trial added a method: a class left with the base class's ``METHOD = "base"`` ran and mislabelled its traces
and messages (``--model base: unknown model argument(s)``); a misspelled class in its registry line was an
AttributeError traceback. Both are one-line errors naming the fix, and every registered method passes them."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError


def test_every_registered_method_loads_under_its_own_name():
    from tokrag_model.methods import METHODS, load

    for name in METHODS:
        cls = load(name)
        assert cls.METHOD == name and isinstance(cls.JOURNAL_REPLAY_SAFE, bool)


def test_a_bad_registry_line_is_one_line_naming_the_fix(monkeypatch):
    from tokrag_model import methods
    from tokrag_model.methods.standard import RagStandardLM

    monkeypatch.setitem(methods.METHODS, "rag-mix", "standard:RagStandardLm")
    with pytest.raises(ConfigError) as exc:
        methods.load("rag-mix")
    assert str(exc.value) == ("METHODS['rag-mix'] = 'standard:RagStandardLm': tokrag_model/methods/standard.py has no "
                              "class 'RagStandardLm' (did you mean 'RagStandardLM'?); fix the line in "
                              "tokrag_model/methods/__init__.py")

    class MixLM(RagStandardLM):  # METHOD inherited: "rag-standard"
        pass

    monkeypatch.setattr(methods.standard, "MixLM", MixLM, raising=False)
    monkeypatch.setitem(methods.METHODS, "rag-mix", "standard:MixLM")
    with pytest.raises(ConfigError) as exc:
        methods.load("rag-mix")
    assert str(exc.value) == ("METHODS['rag-mix'] = 'standard:MixLM': MixLM.METHOD is 'rag-standard'; set METHOD = "
                              "'rag-mix' in tokrag_model/methods/standard.py (its traces and messages carry METHOD)")
