"""s53 r8 (review of 870d2ba): tests that replace ``tokrag_model.loading._convert_gguf`` by a stand-in must not leave
:func:`tokrag_model.loading.converter_key` memoised with the stand-in's key.

``converter_key`` hashes the source of ``_convert_gguf`` and is memoised for the process (``functools.lru_cache``);
it names an alias's converted folder (``smollm2-135m-instruct-<sha>-c<key>``). The autouse fixture of
tests/test_s53_f5_model_prechecks.py (and ``fake_alias`` in tests/test_loading_scratch_s44f6b.py) replaced
``_convert_gguf`` while an alias check computed the key first in that process: ``e7befdba`` (``c6c90cfca`` for the
other) stayed memoised after monkeypatch had put the real function back (``e69eaa28``), so a later test of the same
xdist worker that loads SmolLM2 or Gemma looked for a converted folder that does not exist and converted the model
again into the user's cache (/work/scratch/s53/r8/probe_key_leak.py, probe_key_leak.txt).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys
import pytest
import tokrag_model.loading as loading

rc = pytest.main(["-q", "-p", "no:cacheprovider", "-o", "addopts=", *sys.argv[1:]])
memo = loading.converter_key()
loading.converter_key.cache_clear()
print("KEYS " + json.dumps([int(rc), memo, loading.converter_key()]))
"""


def test_tests_that_replace_the_converter_leave_the_real_converter_key_memoised():
    tests = ["tests/test_s53_f5_model_prechecks.py::test_an_alias_package_without_its_chunk_packages_is_refused_in_one_line",
             "tests/test_loading_scratch_s44f6b.py::test_conversion_removes_the_scratch_folders_interrupted_conversions_left"]
    for test in tests:  # each in a fresh process: the key is first computed there, under the stand-in
        out = subprocess.run([sys.executable, "-c", CHILD, test], cwd=ROOT, capture_output=True, text=True, timeout=600,
                             env={**os.environ, "HF_HUB_OFFLINE": "1"})
        line = [s for s in out.stdout.splitlines() if s.startswith("KEYS ")]
        assert line, (test, out.stdout[-2000:], out.stderr[-2000:])
        rc, memo, real = json.loads(line[-1][5:])
        assert rc == 0, (test, out.stdout[-2000:])
        assert memo == real, f"{test} left converter_key() == {memo!r} memoised; with the real _convert_gguf: {real!r}"
