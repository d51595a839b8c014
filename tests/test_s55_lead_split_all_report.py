"""The leaderboard report's questions line for a bring-your-own cell run with task metadata ``split: all`` (s55 f5):
every question of the file is scored, so it says none was held out, not the hash split it did not apply."""
from leaderboards.report import questions_text


def _meta(split: str, in_split: int, dev: int, shot: int) -> dict:
    return {"questions": "q.jsonl", "split": split,
            "tokrag_data": {"questions": {"split": split, "in_split": in_split, "total": 24, "dev": dev, "fewshot": shot},
                            "files": {"questions": {"path": "/data/q.jsonl"}}}}


def test_split_all_says_none_held_out() -> None:
    assert questions_text(_meta("all", 24, 2, 1), 24, 24) == (
        "questions /data/q.jsonl, 24 of 24 in split all (none held out: the 3 of the dev / few-shot pool are scored too), "
        "all 24 scored")


def test_split_test_and_dev_lines_unchanged() -> None:
    assert questions_text(_meta("test", 21, 2, 1), 8, 21) == (
        "questions /data/q.jsonl, 21 of 24 in split test (3 held out by hash: 2 dev, 1 few-shot), first 8 of 21 scored")
    assert questions_text(_meta("dev", 2, 2, 1), 2, 2) == (
        "questions /data/q.jsonl, 2 of 24 in split dev (by hash: 21 test, 2 dev, 1 few-shot), all 2 scored")
