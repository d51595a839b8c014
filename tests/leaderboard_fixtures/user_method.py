"""A user's tokrag method outside ``tokrag_model.methods``: it overrides only ``setup()`` (the documented hook),
where a user may change the model it is built over (an adapter, a hook, ``padding_side``)."""

from tokrag_model.methods.standard import RagStandardLM


class PaddingLeftStandard(RagStandardLM):
    def setup(self) -> None:
        super().setup()
        self.tokenizer.padding_side = "left"  # a change to the shared tokenizer: never handed to the next cell
