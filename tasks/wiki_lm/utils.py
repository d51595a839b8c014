"""``!function utils.*`` target for the YAMLs in this folder (lm-eval resolves it next to the YAML)."""

from tasks.utils import load_qa, load_wiki_lm, process_results_qa, process_results_wiki_lm  # noqa: F401
from tasks.wikitext import load_wikitext103, process_results_wikitext  # noqa: F401
