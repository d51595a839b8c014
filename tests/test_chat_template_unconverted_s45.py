"""``--apply_chat_template`` with ``gemma-3-270m`` on a fresh cache was refused only after the GGUF was converted and
the run built its contexts (150 s, exit 1, found by a new-user trial, stop 45): ``has_chat_template`` said "unknown"
for an alias not converted yet. An alias's pinned GGUF has a known answer (``ALIASES[...]["chat_template"]``)."""
import pytest

from tokrag_model.base import check_chat_template_before_load
from tokrag_model.loading import ALIASES, converted_folder, has_chat_template
from retrieval.errors import ConfigError


@pytest.mark.parametrize("alias, expected", [("gemma-3-270m", False), ("smollm2-135m-instruct", True)])
def test_an_unconverted_alias_has_its_pinned_answer(tmp_path, alias, expected):
    assert not converted_folder(alias, tmp_path).exists()
    assert has_chat_template(alias, models_dir=tmp_path) is expected


def test_the_pinned_answer_is_the_installed_smollm2_ggufs():
    """The constant is what the GGUF of its sha256 holds (``tokenizer.chat_template``, read as the converter reads it)."""
    from leaderboards.keys import _gguf_chat_template
    from tokrag_model.loading import _alias_parts

    pkg, sha, _ = _alias_parts("smollm2-135m-instruct")
    assert sha == ALIASES["smollm2-135m-instruct"]["chat_template_sha256"]
    template = _gguf_chat_template(next(pkg.rglob(ALIASES["smollm2-135m-instruct"]["gguf"])))
    assert bool(template) is ALIASES["smollm2-135m-instruct"]["chat_template"]


def test_another_gguf_of_the_alias_is_left_to_the_load(tmp_path, monkeypatch):
    import tokrag_model.loading as loading

    real = loading._alias_parts

    def other_version(name, models_dir=None):
        pkg, _sha, out = real(name, models_dir)
        return pkg, "0" * 64, out

    monkeypatch.setattr(loading, "_alias_parts", other_version)
    assert has_chat_template("smollm2-135m-instruct", models_dir=tmp_path) is None
    assert has_chat_template("gemma-3-270m", models_dir=tmp_path) is None


def test_a_fresh_cache_refuses_gemma_with_a_chat_template_before_any_conversion(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path))
    import tokrag_model.loading as loading

    monkeypatch.setattr(loading, "resolve_alias", lambda *a, **k: pytest.fail("converted before the check"))
    with pytest.raises(ConfigError, match="no chat template"):
        check_chat_template_before_load("rag-standard", "pretrained=gemma-3-270m", True)
