"""``tokrag leaderboard check``'s NOTE lines (s54 f2; /work/scratch/s54/f2/repro12.py, repro12.old.txt / .new.txt):

* The run-key NOTE under a FAIL named a model argument the baseline's run did not give as ``model_args[mode]
  (absent) -> none``: a reader could not tell what the run had used. It now says the value the method gave it,
  ``(absent: default first)`` (a tokrag method's resolved arguments, else the model class's keyword default), or
  ``(absent: not recorded)`` when that cannot be told.
* A baseline's ``machines`` thread count written by hand as text (``"2"``) was compared as text with the runs' 2: a
  false ``NOTE machine`` whose two settings read the same (``2 threads`` and ``2 threads``; for one thread ``1
  thread`` against ``1 threads``). Thread counts are compared and shown by value. With one cell compared the NOTE
  said ``1 of the 1 cells compared``; it now says ``the one cell compared``.

The NOTE tests run the toy spec (tests/leaderboard_fixtures, the toy LM: seconds)."""

from __future__ import annotations

import json
import shutil

import pytest
from leaderboard_helpers import TOY, write_spec

import leaderboards.check as C
from leaderboards.cli import main as lb_main
from leaderboards.runner import config_differences, run_spec
from leaderboards.spec import load_spec

CID = "standard/toy_qa/seed1"


def test_an_absent_model_argument_is_named_with_its_default():
    smol = {"pretrained": "smollm2-135m-instruct"}
    old, new = {"model": "rag-cad", "model_args": smol}, {"model": "rag-cad", "model_args": {**smol, "alpha": 2.0}}
    assert config_differences(old, new) == ["model_args[alpha] (absent: default 1.0) -> 2.0"]  # was (absent) -> 2.0
    assert config_differences(new, old) == ["model_args[alpha] 2.0 -> (absent: default 1.0)"]
    # not a tokrag method: its constructor's keyword default (the toy LM's mode is "first")
    assert config_differences({"model": TOY, "model_args": {}}, {"model": TOY, "model_args": {"mode": "none"}}) == [
        "model_args[mode] (absent: default first) -> none"]
    # a model that cannot be imported, an argument its method does not know: not recorded
    assert config_differences({"model": "nosuch.module:Model", "model_args": {}},
                              {"model": "nosuch.module:Model", "model_args": {"x": 1}}) == [
        "model_args[x] (absent: not recorded) -> 1"]
    assert config_differences({"model": TOY, "model_args": {}}, {"model": TOY, "model_args": {"zzz": 1}}) == [
        "model_args[zzz] (absent: not recorded) -> 1"]
    # other mappings keep their plain '(absent)': what it meant is not the method's
    assert config_differences({"gen_kwargs": {}}, {"gen_kwargs": {"max_gen_toks": 8}}) == [
        "gen_kwargs[max_gen_toks] (absent) -> 8"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The toy spec (``standard`` without a mode: the toy LM's default ``first``) run once, then with mode ``none``
    (another run key) into a second runs folder: ``(spec_default, runs, spec_none, runs_both)``."""
    root = tmp_path_factory.mktemp("s54f2")
    default = load_spec(write_spec(root / "a", tasks=["toy_qa"], methods=[{"name": "standard", "model": TOY}]))
    run_spec(default, root / "runs", progress=False)
    shutil.copytree(root / "runs", root / "runs_both")
    none = load_spec(write_spec(root / "b", tasks=["toy_qa"],
                                methods=[{"name": "standard", "model": TOY, "model_args": {"mode": "none"}}]))
    run_spec(none, root / "runs_both", progress=False)
    return default, root / "runs", none, root / "runs_both"


def _check(spec, runs, base, capsys, *extra):
    capsys.readouterr()
    rc = lb_main(["check", str(spec.path), "--baseline", str(base), "--runs-dir", str(runs), *extra])
    return rc, capsys.readouterr().out.strip().splitlines()


def test_the_run_key_note_says_what_an_absent_setting_was(toy, tmp_path, capsys):
    default, runs, none, both = toy
    base = tmp_path / "b.json"
    assert _check(default, runs, base, capsys, "--write")[0] == 0
    rc, out = _check(none, both, base, capsys)
    notes = [x for x in out if x.startswith("NOTE")]
    assert rc == 1 and len(notes) == 1
    assert (": its config differs in model_args[mode] (absent: default first) -> none (a setting of the spec); this "
            "change may be the cause of the FAIL above") in notes[0]


def test_a_thread_count_written_as_text_is_the_same_machine(toy, tmp_path, capsys):
    default, runs, _none, _both = toy
    base = tmp_path / "b.json"
    assert _check(default, runs, base, capsys, "--write")[0] == 0
    b = json.loads(base.read_text())
    threads = b["machines"][CID]["torch_num_threads"]
    assert isinstance(threads, int)
    for hand in (str(threads), f" {threads} ", float(threads)):  # "2", " 2 ", 2.0: the runs' 2
        base.write_text(json.dumps({**b, "machines": {CID: {**b["machines"][CID], "torch_num_threads": hand}}}))
        rc, out = _check(default, runs, base, capsys)
        assert rc == 0 and out[-1] == "4 checks: 4 OK, 0 FAIL"
        assert not [x for x in out if x.startswith("NOTE")], (hand, out)  # was NOTE machine: '2 threads' against '2 threads'
    # another count written as text still differs, is shown as a count, and one cell compared reads as one
    base.write_text(json.dumps({**b, "machines": {CID: {**b["machines"][CID], "torch_num_threads": str(threads + 1)}}}))
    rc, out = _check(default, runs, base, capsys)
    assert rc == 0 and out[-2].startswith("NOTE machine: the one cell compared ran on another machine than the baseline "
                                          f"was written from ({CID}): these runs on ")
    assert f", {threads} thread{'' if threads == 1 else 's'}, " in out[-2]
    assert f"the baseline on cpu {b['machines'][CID]['cpu_model']}" in out[-2] and f", {threads + 1} threads, " in out[-2]


def test_one_thread_written_as_text_is_labelled_one_thread():
    from leaderboards.provenance_view import setting_label

    base = {"device": "cpu", "cpu_model": "AMD EPYC", "cpu_capability": "AVX2", "torch": "2.13.0+cpu"}
    hand, runs = C._setting({**base, "torch_num_threads": "1"}), C._setting({**base, "torch_num_threads": 1})
    assert hand == runs and hand["torch_num_threads"] == 1
    assert setting_label(hand) == "cpu AMD EPYC (AVX2), 1 thread, torch 2.13.0+cpu"  # was '1 threads'
    assert C._setting({**base, "torch_num_threads": "many"})["torch_num_threads"] == "many"  # not a count: kept
    assert C._setting({**base, "torch": 2.1, "torch_num_threads": 1.5}) == {**runs, "torch": "2.1",
                                                                            "torch_num_threads": 1.5}
    note = C.MachineNote("cpu AMD EPYC (AVX2), 2 threads", "cpu AMD EPYC (AVX2), 1 thread", ("a/t/seed1",), (), 2,
                         False)
    assert note.render().startswith("NOTE machine: 1 of the 2 cells compared ran on another machine than the baseline "
                                    "was written from (first: a/t/seed1): these runs on cpu AMD EPYC (AVX2), 2 threads, "
                                    "the baseline on cpu AMD EPYC (AVX2), 1 thread; ")
