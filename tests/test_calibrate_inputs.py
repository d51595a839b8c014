"""Bad inputs and interruptions of ``tokrag calibrate`` / ``tokrag analyze`` (a breaker's findings), on a fake model:
records files cut by a kill, Ctrl-C, an unwritable ``--out``, a preset layer outside the model, ``--n`` above the pool."""

from __future__ import annotations

import json
import logging
import re

import pytest

from retrieval.errors import ConfigError


@pytest.fixture
def fake(monkeypatch):
    """A fake TokRAGLM and data: ``pool`` wiki samples ``q0…``; ``scored`` lists the samples scored; ``interrupt_at``
    raises KeyboardInterrupt when that many samples were scored."""
    from tasks import analyze

    from tests.analyze_fakes import install_fake

    return install_fake(monkeypatch, lambda i, sid: [analyze.TokenRecord(sid, 0, 1, -1.0, -2.0, 1, 2, -0.5, -0.6)])


def _collect(state, out, n):
    from tasks.analyze import collect_records

    state.scored.clear()
    recs, cfg = collect_records(state.lm, "wiki", "dev", n, out, progress=False)
    return recs, cfg


def test_a_records_line_cut_by_a_kill_is_dropped_before_appending(fake, tmp_path, caplog) -> None:
    """A torn last line got the next record appended onto it, and the reader stopped there: every later resume
    redid every sample after it (4 -> 5 -> 6 lines). Now the torn line is cut off, once, with a WARNING."""
    out = tmp_path / "out"
    _, cfg = _collect(fake, out, 4)
    path = out / cfg["records_file"].rsplit("/", 1)[-1]
    with open(path, "a", encoding="utf-8") as f:  # a kill during a write
        f.write('{"sample": "wiki:q4", "inputs": "ab')
    with caplog.at_level(logging.WARNING, logger="tasks.analyze"):
        recs, _ = _collect(fake, out, 6)
    assert fake.scored == ["wiki:q4", "wiki:q5"] and len(recs) == 6
    assert any(f"{path}:5: the last line is not a complete record" in m for m in caplog.messages)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["sample"] for x in lines] == [f"wiki:q{i}" for i in range(6)]
    caplog.clear()
    recs, _ = _collect(fake, out, 6)  # resumes everything, says nothing
    assert fake.scored == [] and len(recs) == 6 and not caplog.messages


def test_a_damaged_line_before_the_last_is_skipped_and_the_lines_after_it_are_kept(fake, tmp_path, caplog) -> None:
    """A file an older version appended onto a torn line: the glued line is skipped with a WARNING naming file:line;
    the valid lines after it are kept (the reader stopped at it and redid them on every resume)."""
    out = tmp_path / "out"
    _, cfg = _collect(fake, out, 6)
    path = out / cfg["records_file"].rsplit("/", 1)[-1]
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[4] = '{"sample": "wiki:q9", "inputs": "ab' + lines[4]  # q4's record glued onto a torn line
    path.write_text("".join(lines), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="tasks.analyze"):
        recs, _ = _collect(fake, out, 6)
    assert fake.scored == ["wiki:q4"] and len(recs) == 6
    assert any(f"{path}:5: not a complete record" in m and "skipped" in m for m in caplog.messages)
    assert path.read_text(encoding="utf-8").startswith("".join(lines))  # nothing the user had is removed


def test_ctrl_c_prints_one_line_naming_the_records_kept_and_exits_130(fake, tmp_path, capsys) -> None:
    """Ctrl-C during the scoring printed a ~40-line KeyboardInterrupt traceback; now one line and 130, and the
    same command resumes from the records kept."""
    from tasks import analyze, calibrate

    out = tmp_path / "out"
    argv = ["--data", "wiki", "--n", "5", "--split", "dev", "--out", str(out)]
    fake.interrupt_at = 2
    for main, command in ((calibrate.main, "calibrate"), (analyze.main, "analyze")):
        fake.scored.clear()
        try:
            rc = main(argv)
        except KeyboardInterrupt:
            pytest.fail(f"{command}: KeyboardInterrupt escaped (a traceback)")
        err = [x for x in capsys.readouterr().err.strip().splitlines() if not x.startswith("wiki dev:")]  # the bar
        assert rc == 130 and len(err) == 1, err
        records = next(out.glob("records_wiki_dev_*.jsonl"))
        kept = 2 if command == "calibrate" else 4
        assert err[0] == (f"tokrag {command}: interrupted; {kept} samples kept in {records}: "
                          "run the same command to resume")
    assert len(records.read_text(encoding="utf-8").splitlines()) == 4


def test_ctrl_c_while_the_model_loads_is_one_line(fake, tmp_path, capsys, monkeypatch) -> None:
    from tasks import analyze, calibrate

    def interrupted(_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(calibrate, "load_lm", interrupted)
    try:
        rc = calibrate.main(["--data", "wiki", "--split", "dev", "--out", str(tmp_path / "o")])
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt escaped (a traceback)")
    assert rc == 130
    assert capsys.readouterr().err == ("tokrag calibrate: interrupted before any sample was scored in this run: "
                                       "run the same command to resume\n")


@pytest.mark.parametrize("extra, opt", [([], "--out"), (["--preset-out", "/proc/tokrag-no/p.json"], "--preset-out")])
def test_an_unwritable_out_is_refused_before_the_model_loads(extra, opt, monkeypatch) -> None:
    """--out /proc/x ran the model load and the scoring (39 s), then a FileNotFoundError traceback at the mkdir."""
    from tasks import analyze, calibrate

    def no_model(_args):
        raise AssertionError("the model was loaded before --out was checked")

    monkeypatch.setattr(analyze, "load_lm", no_model)
    monkeypatch.setattr(calibrate, "load_lm", no_model)
    argv = ["--data", "wiki", "--split", "dev", "--out", "/proc/tokrag-no" if opt == "--out" else "/tmp"] + extra
    with pytest.raises(ConfigError, match=f"^{opt} /proc/tokrag-no.*: cannot create it"):
        calibrate.main(argv)
    if opt == "--out":
        with pytest.raises(ConfigError, match="^--out /proc/tokrag-no: cannot create it"):
            analyze.main(argv)


def test_a_preset_layer_outside_the_model_names_the_preset_file_and_the_fix(fake, tmp_path, monkeypatch) -> None:
    """analyze said 'policy calibrated: layer=99 is outside the model's 4 layers (0..3)', naming neither the preset
    file nor what to do; now it does, before the model loads where the preset records its depth."""
    from tasks import analyze
    from tokrag_model.methods.tokrag import write_preset

    path = tmp_path / "layer99.json"
    write_preset(path, fake.lm, {"layer": 99}, {})
    argv = ["--data", "wiki", "--out", str(tmp_path / "o"), "--preset", str(path), "--model", "fake-lm"]
    want = (f"--preset {path} (params.layer): layer=99 is outside the model's 4 layers (0..3); use a preset "
            "calibrated for this model (tokrag calibrate --model fake-lm --split dev)")
    loaded = []
    monkeypatch.setattr(analyze, "load_lm", lambda args: loaded.append(1) or fake.lm)
    with pytest.raises(ConfigError) as exc:
        analyze.main(argv)
    assert str(exc.value) == want and not loaded
    # a preset that does not record its depth: the same message once the model tells it
    raw = json.loads(path.read_text())
    del raw["model"]["n_layers"]
    path.write_text(json.dumps(raw))
    monkeypatch.setattr("tokrag_model.methods.tokrag.read_preset", lambda p, *a, **k: {**raw, "path": str(p)})
    with pytest.raises(ConfigError) as exc:
        analyze.main(argv)
    assert str(exc.value) == want and loaded


def test_n_above_the_pool_says_so_and_records_the_samples_used(fake, tmp_path, caplog) -> None:
    """--n 99999999 was capped at the pool size silently, and the preset's calibration.data.*.n recorded 99999999."""
    fake.pool = 3
    with caplog.at_level(logging.WARNING, logger="tasks.analyze"):
        recs, cfg = _collect(fake, tmp_path / "out", 99999999)
    assert cfg["n"] == 3 and len(recs) == 3
    assert "--n 99999999: the wiki dev pool holds only 3 samples; using those 3" in caplog.messages
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="tasks.analyze"):
        _, cfg = _collect(fake, tmp_path / "out", 2)
    assert cfg["n"] == 2 and not caplog.messages and re.fullmatch(r"[0-9a-f]+", cfg["key"])


def test_a_damaged_last_line_with_its_line_end_is_skipped_not_cut(fake, tmp_path, caplog) -> None:
    """Only a line without its line end can be a torn write; a damaged line that ends in a newline (glued by an older
    version) is skipped as in the middle of the file, not cut off it (a reviewer's finding). Valid JSON of another
    shape is skipped too (it raised AttributeError out of the reader)."""
    out = tmp_path / "out"
    _, cfg = _collect(fake, out, 2)
    path = out / cfg["records_file"].rsplit("/", 1)[-1]
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"sample": "wiki:q2", "records": [[1, 2]]}\n')
    before = path.read_bytes()
    with caplog.at_level(logging.WARNING, logger="tasks.analyze"):
        recs, _ = _collect(fake, out, 3)
    assert fake.scored == ["wiki:q2"] and len(recs) == 3
    assert path.read_bytes().startswith(before)  # nothing cut
    assert any(f"{path}:3: not a complete record" in m for m in caplog.messages)


def test_records_are_read_and_appended_under_the_files_lock(fake, tmp_path, monkeypatch) -> None:
    """calibrate and analyze --split dev with one --out append to one records file: the repair (read, then truncate
    a torn last line) ran with no lock, so records another process appended between the read and the truncation
    were cut (a reviewer's probe lost two complete records). The repair and every append hold the file's lock (one
    hold from the read to the last append: test_two_processes_collecting_one_records_file_take_turns)."""
    import contextlib
    from pathlib import Path

    import retrieval.io
    from tasks import analyze

    events = []
    real_repair = analyze._repair_records

    @contextlib.contextmanager
    def lock(path, timeout=-1):
        events.append(("lock", str(path)))
        yield
        events.append(("unlock", str(path), len(Path(path).read_text(encoding="utf-8").splitlines())))

    monkeypatch.setattr(retrieval.io, "file_lock", lock)
    monkeypatch.setattr(analyze, "_repair_records", lambda p: (events.append(("repair", str(p))), real_repair(p))[1])
    out = tmp_path / "out"
    _, cfg = _collect(fake, out, 2)
    path = cfg["records_file"]
    assert events == [("lock", path), ("repair", path), ("unlock", path, 2)]  # both lines appended under the lock


def test_two_processes_collecting_one_records_file_take_turns(fake, tmp_path, caplog) -> None:
    """Two collections of one records file at once (two ``tokrag analyze`` into one --out, or a relaunch while one
    runs) each read the file before the other had written, scored every sample and appended it: every line twice
    (each run's own records were right, and a reader keeps one line per sample, but the model work was doubled). The
    file's lock is now held from the read to the last append: the second waits, with one WARNING, then reuses."""
    import threading
    import time

    from tasks.analyze import collect_records

    out, fake.delay, got = tmp_path / "out", 0.2, {}

    def run(who):
        got[who] = collect_records(fake.lm, "wiki", "dev", 3, out, progress=False)

    first = threading.Thread(target=run, args=("first",))
    first.start()
    while not fake.scored and first.is_alive():  # the first is scoring q0
        time.sleep(0.01)
    with caplog.at_level(logging.WARNING, logger="tasks.analyze"):
        run("second")  # separate lock handles, as in two processes
    first.join()
    path = out / got["first"][1]["records_file"].rsplit("/", 1)[-1]
    lines = [json.loads(x)["sample"] for x in path.read_text(encoding="utf-8").splitlines()]
    assert lines == ["wiki:q0", "wiki:q1", "wiki:q2"]  # each sample once
    assert fake.scored == ["wiki:q0", "wiki:q1", "wiki:q2"]  # scored once, by the first
    assert got["second"][1]["reused"] == 3 and got["first"][1]["reused"] == 0
    assert got["second"][0] == got["first"][0] and len(got["second"][0]) == 3
    waits = [m for m in caplog.messages if "another process is collecting these records" in m]
    assert len(waits) == 1 and str(path) in waits[0]


def test_a_dangling_symlink_out_is_refused_before_the_model_loads(tmp_path) -> None:
    """--out pointing at a symbolic link whose target is missing passed the check (resolve() follows the link and the
    probe ran in an existing parent) and failed after the model loaded (mkdir: FileExistsError)."""
    import os

    from retrieval.io import check_writable

    link = tmp_path / "dangling"
    os.symlink(tmp_path / "nothere" / "sub", link)
    with pytest.raises(ConfigError) as exc:
        check_writable(link, "--out", folder=True)
    assert str(exc.value) == (f"--out {link}: {link} is a symbolic link to {tmp_path / 'nothere' / 'sub'}, which does "
                              "not exist; create its target or give another path")
    with pytest.raises(ConfigError) as exc:  # a folder under it: mkdir(parents=True) failed on the link the same way
        check_writable(link / "run1", "--out", folder=True)
    assert str(exc.value).startswith(f"--out {link / 'run1'}: {link} is a symbolic link to ")
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "good")
    assert check_writable(tmp_path / "good", "--out", folder=True) == tmp_path / "real"
