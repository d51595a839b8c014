"""s59 r5, review of f1's dbbf3c0: with a ``datasets`` other than the pinned one, lacking
``data_files._get_single_origin_metadata``, the content keys of a task's local data files were not installed and only a
DEBUG line said so: an edit that keeps the file's mtime gave the old rows without a word. Now the first download of a
task over local data files logs one WARNING naming the task, the file, the datasets version and what to do; hub tasks
and tasks with their own ``custom_dataset`` loader log nothing.
"""

from __future__ import annotations

import logging
import types

import datasets
import datasets.data_files


class _Config:
    def __init__(self, task, dataset_path, dataset_kwargs=None, custom_dataset=None):
        self.task, self.dataset_path, self.dataset_kwargs = task, dataset_path, dataset_kwargs
        self.custom_dataset = custom_dataset


def _module():
    """A stand-in for ``lm_eval.api.task`` whose ConfigurableTask records its downloads."""

    class ConfigurableTask:
        def __init__(self, config):
            self.config, self.downloads = config, []

        def download(self, dataset_kwargs=None):
            self.downloads.append(dataset_kwargs)
            return "rows"

    return types.SimpleNamespace(ConfigurableTask=ConfigurableTask)


def test_a_datasets_without_the_patched_function_warns_once_for_a_task_over_local_data(tmp_path, monkeypatch, caplog):
    from tokrag_model._local_data_files import patch_task_download

    monkeypatch.delattr(datasets.data_files, "_get_single_origin_metadata")
    monkeypatch.setattr(datasets, "__version__", "9.9.9")
    data = tmp_path / "my data" / "q.jsonl"
    data.parent.mkdir()
    data.write_text('{"question": "q", "answers": ["a"]}\n', encoding="utf-8")
    module = _module()
    patch_task_download(module)
    cls = module.ConfigurableTask
    with caplog.at_level(logging.WARNING, logger="tokrag_model"):
        hub = cls(_Config("hub_task", "google-research-datasets/nq_open"))
        own = cls(_Config("own_loader", "json", {"data_files": str(data)}, custom_dataset=lambda **kw: {}))
        assert hub.download() == "rows" and own.download() == "rows"
        assert [r for r in caplog.records if r.name == "tokrag_model"] == []
        local = cls(_Config("my_json", "json", {"data_files": {"test": str(data)}}))
        assert local.download({"data_files": {"test": str(data)}}) == "rows"  # still downloads, once
        assert local.downloads == [{"data_files": {"test": str(data)}}]
        assert local.download() == "rows"  # a second download: no second line
    lines = [r.getMessage() for r in caplog.records if r.name == "tokrag_model"]
    assert lines == [
        f"task 'my_json' reads local data {data}, but datasets 9.9.9 has no data_files._get_single_origin_metadata, "
        "so its cache knows a local data file by its modification time only: after an edit that keeps the mtime "
        "(cp -p, rsync -a, tar) this run reads the old rows; install the datasets version tokrag's pyproject.toml "
        "pins, or delete the task's folder under HF_DATASETS_CACHE after such an edit"]
    assert all(r.levelno == logging.WARNING for r in caplog.records if r.name == "tokrag_model")
