"""check_pretrained's line for a model folder's unreadable ``config.json`` or ``tokenizer_config.json`` names the file
by its name in the folder, also when the file is a link (s60 r1, review of j1's 073da29). A Hugging Face snapshot
folder given as pretrained= holds links to ``blobs/<sha>``; before (3e151fb's tree) the line named the resolved link
target, ``.../blobs/2222 is not a tokenizer config the load can read (...)``, which names neither file. Now
``.../snapshots/abc/tokenizer_config.json (a link to .../blobs/2222) is not ...``."""

from __future__ import annotations

import pytest

from retrieval.errors import ConfigError
from tokrag_model.loading import check_pretrained

BOM = "it starts with a UTF-8 byte order mark, which transformers' JSON reader refuses; save it without one"
FIX = "fix it or point pretrained= at a complete model folder"


def _snapshot(tmp_path, config: bytes, tokenizer: bytes):
    """A hub-cache-like folder: ``snapshots/abc/{config,tokenizer_config}.json`` linked to ``blobs/1111``/``2222``."""
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / "1111").write_bytes(config)
    (tmp_path / "blobs" / "2222").write_bytes(tokenizer)
    snap = tmp_path / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to("../../blobs/1111")
    (snap / "tokenizer_config.json").symlink_to("../../blobs/2222")
    return snap


def test_a_linked_tokenizer_config_is_named_by_its_name(tmp_path):
    snap = _snapshot(tmp_path, b'{"model_type": "llama"}', b'\xef\xbb\xbf{"tokenizer_class": "x"}')
    with pytest.raises(ConfigError) as err:
        check_pretrained(str(snap))
    assert str(err.value) == (f"pretrained={str(snap)!r}: {snap.resolve() / 'tokenizer_config.json'} (a link to "
                              f"{(tmp_path / 'blobs' / '2222').resolve()}) is not a tokenizer config the load can read "
                              f"({BOM}); {FIX}")


def test_a_linked_config_is_named_by_its_name(tmp_path):
    snap = _snapshot(tmp_path, b'["llama"]', b'{"tokenizer_class": "x"}')
    with pytest.raises(ConfigError) as err:
        check_pretrained(str(snap))
    assert str(err.value) == (f"pretrained={str(snap)!r}: {snap.resolve() / 'config.json'} (a link to "
                              f"{(tmp_path / 'blobs' / '1111').resolve()}) is not a model config (a JSON list, not an "
                              f"object); {FIX}")


def test_a_plain_file_is_named_as_before(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
    (tmp_path / "m" / "tokenizer_config.json").write_bytes(b'\xef\xbb\xbf{}')
    with pytest.raises(ConfigError) as err:
        check_pretrained(str(tmp_path / "m"))
    assert str(err.value) == (f"pretrained={str(tmp_path / 'm')!r}: {(tmp_path / 'm' / 'tokenizer_config.json').resolve()} "
                              f"is not a tokenizer config the load can read ({BOM}); {FIX}")
