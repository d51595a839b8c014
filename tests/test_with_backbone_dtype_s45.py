"""RAGMethodLM.with_backbone records the backbone's dtype: over a bfloat16 SmolLM2 its resolved config said float32
(the argument's default), so a benchmark or sweep built that way recorded the wrong precision."""
from tokrag_model.base import Backbone
from tokrag_model.methods import MODELS


def test_with_backbone_records_the_backbone_dtype():
    bb = Backbone.load("smollm2-135m-instruct", dtype="bfloat16")
    lm = MODELS["rag-replug"].with_backbone(bb)
    assert lm.resolved_config["dtype"] == "bfloat16"
    assert lm.resolved_config["batch_invariant"] is False  # not claimed for bfloat16 on CPU (6afac03)
