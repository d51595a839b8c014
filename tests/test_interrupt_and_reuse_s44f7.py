"""s44 f7: (1) Ctrl-C of a command dies by SIGINT after its one line (an exit status 130 let bash go on with a
``for ...; do tokrag ...; done`` loop), while an in-process caller (an explicit argv) keeps the exit code 130;
(2) ``tokrag index build`` of an existing complete BM25 index reuses it without starting Java (7130895 started the
JVM first: 0.03 s -> 0.6 s, and Java needed), and a bad ``--index`` folder is reported before Java starts;
(3) Ctrl-C of ``tokrag retrieve`` after the search finished no longer says "nothing was kept" (the complete run is
in the run cache and the same command writes the outputs from it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _corpus(tmp_path: Path, n: int = 10) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "title": f"T{i}", "text": f"passage {i} about topic {i % 3}"})
                            + "\n" for i in range(n)), encoding="utf-8")
    return path


def _no_java(monkeypatch) -> list:
    """start_jvm that fails (a machine without Java, simulated); -> the list of its calls."""
    import retrieval.bm25 as bm25
    import retrieval.java as java
    from retrieval.errors import JavaSetupError

    calls = []

    def no_java(*a, **k):
        calls.append(1)
        raise JavaSetupError("no Java here (simulated)")

    monkeypatch.setattr(java, "start_jvm", no_java)
    monkeypatch.setattr(bm25, "start_jvm", no_java)
    return calls


def test_reusing_a_complete_bm25_index_does_not_start_java(tmp_path, monkeypatch, capsys):
    corpus = _corpus(tmp_path)
    cmd = ["index", "build", "--corpus", str(corpus), "--index", str(tmp_path / "idx")]
    env = dict(os.environ, PYTHONPATH=str(ROOT), TOKRAG_CACHE_DIR=str(tmp_path / "cache"))
    built = subprocess.run([sys.executable, "-c", f"import sys; from tokrag_model.cli import main; sys.exit(main({cmd!r}))"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-3000:]
    calls = _no_java(monkeypatch)
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    from tokrag_model.cli import main

    capsys.readouterr()
    assert main(cmd) == 0, capsys.readouterr().err
    assert calls == []
    assert capsys.readouterr().out.strip() == str((tmp_path / "idx").resolve())


def test_a_bad_index_folder_is_reported_before_java_starts(tmp_path, monkeypatch, capsys):
    corpus = _corpus(tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me", encoding="utf-8")
    calls = _no_java(monkeypatch)
    from tokrag_model.cli import main

    assert main(["index", "build", "--corpus", str(corpus), "--index", str(tmp_path / "notes")]) == 2
    err = capsys.readouterr().err
    assert calls == [] and "Java" not in err and "notes" in err, err
    assert (tmp_path / "notes" / "mine.txt").read_text(encoding="utf-8") == "keep me"


@pytest.mark.parametrize("as_command", [True, False])
def test_ctrl_c_of_the_command_dies_by_sigint_an_in_process_caller_gets_130(tmp_path, as_command):
    """The console script ``tokrag`` (``main()``, no argv) dies by SIGINT after the line: a shell loop stops; a
    caller in Python (``main(argv)``) gets 130."""
    call = 'sys.argv = ["tokrag", "analyze", "--x"]; rc = main()' if as_command else 'rc = main(["analyze", "--x"])'
    script = textwrap.dedent(f"""
        import sys
        import tasks.analyze
        from tokrag_model.cli import main

        def interrupted(argv):
            raise KeyboardInterrupt

        tasks.analyze.main = interrupted
        {call}
        print("returned", rc)
        sys.exit(rc)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal starts it
    assert done.stderr == "tokrag analyze: interrupted; run the same command again\n"
    if as_command:
        assert done.returncode == -signal.SIGINT and done.stdout == ""
    else:
        assert done.returncode == 130 and done.stdout == "returned 130\n"


def test_ctrl_c_while_retrieve_writes_its_outputs_does_not_say_nothing_was_kept(tmp_path, monkeypatch, capsys):
    corpus = _corpus(tmp_path)
    (tmp_path / "topics.tsv").write_text("q1\tpassage about topic 1\nq2\ttopic 2\n", encoding="utf-8")
    monkeypatch.setenv("TOKRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    import retrieval.cli as rcli

    def interrupted(*a, **k):  # Ctrl-C while the outputs are written, after the search (worker or in-process)
        raise KeyboardInterrupt

    monkeypatch.setattr(rcli, "_write_outputs", interrupted)  # not retrieval.io's writer: in-process the cache uses it
    from tokrag_model.cli import main

    rc = main(["retrieve", "--corpus", str(corpus), "--topics", "topics.tsv", "--hits", "2", "--output", "run.trec"])
    err = capsys.readouterr().err
    assert rc == 130
    complete = [p for p in (tmp_path / "cache").rglob("meta.json")
                if "run.trec" in json.loads(p.read_text(encoding="utf-8")).get("sha256", {})]
    assert complete, "the finished search is in the run cache"
    assert "nothing was kept" not in err
    # in-process (the JVM started here by an earlier test) the search's progress bar is on stderr before the line
    assert "Traceback" not in err and err.endswith("\n")
    assert err.splitlines()[-1] == ("tokrag retrieve: interrupted; a run is cached only when its search is complete (a "
                                    "finished search is kept, and the same command writes the outputs from it): run the "
                                    "same command again")
