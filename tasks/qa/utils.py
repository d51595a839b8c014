"""``!function utils.*`` target for the YAMLs in this folder (lm-eval resolves it next to the YAML)."""

from tasks.longform import process_results_dialogue, process_results_longform  # noqa: F401
from tasks.utils import load_qa, load_wiki_lm, process_results_qa  # noqa: F401
