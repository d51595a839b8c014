"""A local model folder's run key holds its ``.tiktoken`` tokenizer file (s59 rt, read-through of a1's 564c1ef).

a1 made the dense encoder identity (:data:`retrieval.dense.ENCODER_FILE_SUFFIXES`) hash a ``.tiktoken`` tokenizer
file; the leaderboard key of the language model's own folder (:func:`leaderboards.keys.weights_fingerprint`) hashed
``.gguf/.safetensors/.bin/.json/.jinja/.model/.txt/.pt`` (and ``.py`` with ``trust_remote_code``) only, so a folder
tokenized by ``qwen.tiktoken`` (Qwen-1's remote tokenizer code reads it) kept its cells' keys after that file was
replaced at the same path, and the leaderboard reused the numbers of the old tokenizer. A folder without such a file
keys as before. No model is loaded: the key is a hash of the folder's files.
"""

from __future__ import annotations

import json

from leaderboards.keys import _HashMemo, weights_fingerprint


def _folder(tmp_path, tiktoken: bytes | None):
    folder = tmp_path / "qwen-local"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen"}), encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"\0" * 64)
    (folder / "tokenization_qwen.py").write_text("VOCAB = 'qwen.tiktoken'\n", encoding="utf-8")
    if tiktoken is not None:
        (folder / "qwen.tiktoken").write_bytes(tiktoken)
    return folder


def _key(folder, remote: bool = True) -> str:
    args = {"pretrained": str(folder)}
    if remote:
        args["trust_remote_code"] = True
    return weights_fingerprint(args, _HashMemo())


def test_a_replaced_tiktoken_file_gives_a_new_key(tmp_path):
    folder = _folder(tmp_path, b"IQ== 0\nIg== 1\n")
    before = _key(folder)
    (folder / "qwen.tiktoken").write_bytes(b"IQ== 1\nIg== 0\n")  # the same size: another token -> id map
    after = _key(folder)
    assert before != after  # was the same key: the cell's old numbers reused
    assert _key(folder, remote=False) != _key(folder, remote=True)  # the .py still counts only with remote code


def test_a_folder_without_a_tiktoken_file_keys_as_before(tmp_path):
    from retrieval.io import tree_fingerprint

    folder = _folder(tmp_path, None)
    old = tree_fingerprint(folder, _HashMemo(), {".gguf", ".safetensors", ".bin", ".json", ".jinja", ".model", ".txt",
                                                 ".pt", ".py"}, None)
    assert _key(folder) == old
