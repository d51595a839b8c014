"""Gzipped files of a local copy (a folder in the hub's layout, given as hub_id or found in the data folder; a hub cache
snapshot offline) are read as ``datasets`` reads them, and a damaged one is one line (s52 f4; /work/scratch/s52/f4/
probe_gz_old.txt, probe_gz_new.txt).

``tasks.sources._read_local`` read ``.jsonl.gz`` through ``retrieval.io.read_jsonl`` (under ``gzip_errors``), but a
truncated or corrupt ``.csv.gz`` / ``.tsv.gz`` ended in a bare ``EOFError`` / ``zlib.error`` / ``BadGzipFile`` from
pandas, a ``.json.gz`` was never decompressed (a sound one refused as "not valid JSON", which ``datasets`` reads), and a
``.parquet.gz`` (which ``datasets`` does not read either) or a damaged Parquet file was a bare ``ArrowInvalid``."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from retrieval.errors import DataError

ROWS = [{"question": f"q{i}", "answer": [f"a{i}"]} for i in range(50)]
TEXT = {
    "json": json.dumps(ROWS).encode(),
    "csv": ("question,answer\n" + "".join(f"q{i},a{i}\n" for i in range(50))).encode(),
    "tsv": ("question\tanswer\n" + "".join(f"q{i}\ta{i}\n" for i in range(50))).encode(),
}


def _copy(tmp_path, name: str, content: bytes):
    folder = tmp_path / "copy"
    folder.mkdir()
    (folder / name).write_bytes(content)
    return folder, folder / name


def _damaged(data: bytes, how: str) -> bytes:
    gz = gzip.compress(data)
    return gz[: len(gz) // 2] if how == "truncated" else gz[:20] + bytes(b ^ 0x5A for b in gz[20:40]) + gz[40:]


@pytest.mark.parametrize("ext", ["json", "csv", "tsv"])
@pytest.mark.parametrize("how", ["truncated", "corrupt"])
def test_a_damaged_gz_file_is_one_line_naming_it(tmp_path, ext, how):
    from tasks.sources import hub_rows

    folder, f = _copy(tmp_path, f"test.{ext}.gz", _damaged(TEXT[ext], how))
    with pytest.raises(DataError) as exc:
        hub_rows(str(folder), None, "test")
    msg = str(exc.value)
    assert msg.startswith(f"{f}: the gzip file is truncated or corrupt (") and "\n" not in msg, msg
    assert msg.endswith("); download or compress it again"), msg
    assert ("Compressed file ended before the end-of-stream marker was reached" in msg if how == "truncated"
            else "Error -3 while decompressing data" in msg), msg


def test_a_sound_json_gz_is_read_as_datasets_reads_it(tmp_path):
    from tasks.sources import hub_rows

    folder, _ = _copy(tmp_path, "test.json.gz", gzip.compress(TEXT["json"]))
    rows, source = hub_rows(str(folder), None, "test")
    assert rows == ROWS and source == str(folder)
    folder2 = tmp_path / "lines"  # JSON Lines under a .json.gz name: told by its first decompressed byte
    folder2.mkdir()
    (folder2 / "test.json.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in ROWS).encode()))
    assert hub_rows(str(folder2), None, "test")[0] == ROWS
    folder3 = tmp_path / "plain"  # a plain JSON array under a .json.gz name: datasets refuses it (BadGzipFile) too
    folder3.mkdir()
    (folder3 / "test.json.gz").write_bytes(TEXT["json"])
    with pytest.raises(DataError) as exc:
        hub_rows(str(folder3), None, "test")
    assert str(exc.value) == (f"{folder3 / 'test.json.gz'}: the gzip file is truncated or corrupt (Not a gzipped file "
                              "(b'[{')); download or compress it again")


def test_sound_csv_gz_rows_are_unchanged(tmp_path):
    from tasks.sources import hub_rows

    folder, _ = _copy(tmp_path, "test.csv.gz", gzip.compress(TEXT["csv"]))
    assert hub_rows(str(folder), None, "test")[0] == [{"question": f"q{i}", "answer": f"a{i}"} for i in range(50)]


def test_a_parquet_file_that_cannot_be_read_is_one_line(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tasks.sources import hub_rows

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(ROWS), buf)
    folder, f = _copy(tmp_path, "test.parquet.gz", gzip.compress(buf.getvalue()))
    with pytest.raises(DataError) as exc:
        hub_rows(str(folder), None, "test")
    assert str(exc.value).startswith(f"{f}: not a readable Parquet file (Could not open Parquet input source ")
    assert str(exc.value).endswith("; datasets does not read a gzipped Parquet file either: decompress it (gunzip)")
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "test.parquet").write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])  # a cut download
    with pytest.raises(DataError) as exc:
        hub_rows(str(plain), None, "test")
    assert str(exc.value).startswith(f"{plain / 'test.parquet'}: not a readable Parquet file (")
    assert str(exc.value).endswith("; download or write it again") and "\n" not in str(exc.value)
    (plain / "test.parquet").write_bytes(buf.getvalue())
    assert hub_rows(str(plain), None, "test")[0] == ROWS
