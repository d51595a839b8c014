"""Two tokrag wraps of lm-eval's ``ConfigurableTask.download`` hold in either order (s59 lead, after f1's dbbf3c0).

``tasks.provenance._patch_task`` (the results' ``configs.<task>.metadata.tokrag_data``) and
``tokrag_model._local_data_files.patch_task_download`` (a local data file read by its content, not its mtime) both
wrap ``download``. With one shared ``_tokrag`` marker, whichever came second took the method for wrapped already and
returned: in a real lm-eval process the content-key wrap came first, so every task's results lost ``tokrag_data``
(tests/test_s50_f3_byo_folder.py failed with KeyError: 'tokrag_data'); in the other order the rows were read by mtime.
"""
import types

import pytest

from tasks import provenance
from tokrag_model import _local_data_files


def _module():
    class ConfigurableTask:
        def __init__(self):
            self.config = types.SimpleNamespace(custom_dataset=None, dataset_path=None, dataset_kwargs=None, task="t")
            self._config = types.SimpleNamespace(metadata={"version": 1})
            self.calls = []

        def download(self, *args, **kwargs):
            self.calls.append((args, kwargs))
            self.dataset = types.SimpleNamespace(provenance={"files": {"questions": {"sha256": "ab"}}})

    return types.SimpleNamespace(ConfigurableTask=ConfigurableTask)


@pytest.mark.parametrize("order", ["provenance first", "content keys first"])
def test_both_wraps_are_installed_and_run_in_either_order(order, monkeypatch):
    entered = []
    real = _local_data_files.content_keys

    def spy():
        entered.append(True)
        return real()

    monkeypatch.setattr(_local_data_files, "content_keys", spy)
    module = _module()
    patches = [provenance._patch_task, _local_data_files.patch_task_download]
    for patch in patches if order == "provenance first" else patches[::-1]:
        patch(module)
    for patch in patches:  # idempotent: a second call wraps nothing more
        patch(module)
    task = module.ConfigurableTask()
    task.download(1, k=2)
    assert task.calls == [((1,), {"k": 2})]  # the original ran once, with its arguments
    assert task._config.metadata == {"version": 1, provenance.METADATA_KEY: {"files": {"questions": {"sha256": "ab"}}}}
    assert entered == [True]  # the download ran inside content_keys, once


def test_a_real_lm_eval_task_build_records_tokrag_data_and_has_both_wraps():
    """The process the suite runs in: lm-eval's class after tokrag's start-up hook carries both markers."""
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks import TaskManager  # noqa: F401  (imports lm_eval.tasks._factory: provenance's late patch)

    provenance.register()
    assert getattr(ConfigurableTask.download, provenance._MARKER, False)
    assert getattr(ConfigurableTask.download, _local_data_files._MARKER, False)
