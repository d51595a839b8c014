"""retrieval.io.SearcherCache, the one in-process cache of open searchers that BM25 (retrieval.api), dense
(retrieval.dense) and prebuilt (retrieval.prebuilt) retrieval share: reuse while the folder identity is the one
read when opened, a new searcher (the old one closed) when it changed, the oldest evicted past ``max_size``."""

from __future__ import annotations

import pytest

from retrieval.io import SearcherCache


class Opener:
    def __init__(self) -> None:
        self.opened: list[str] = []
        self.closed: list[str] = []

    def open(self, name: str):
        def do() -> str:
            self.opened.append(name)
            return f"{name}#{len(self.opened)}"
        return do


def test_reused_while_the_identity_holds_and_reopened_when_it_changes(tmp_path):
    o, ident = Opener(), {"a": 1}
    c: SearcherCache[str] = SearcherCache(2, close=o.closed.append)
    a = c.get("a", lambda: ident["a"], o.open("a"), lock=tmp_path / "a")
    assert c.get("a", lambda: ident["a"], o.open("a"), lock=tmp_path / "a") == a == "a#1"
    ident["a"] = 2  # the folder rebuilt in place
    assert c.get("a", lambda: ident["a"], o.open("a")) == "a#2" and o.closed == ["a#1"]
    # usable() false (recorded for another corpus): opened again, the held one closed
    assert c.get("a", lambda: ident["a"], o.open("a"), usable=lambda i, s: False) == "a#3" and o.closed == ["a#1", "a#2"]
    assert (tmp_path / "a.lock").exists() and len(c) == 1


def test_oldest_opened_is_evicted_and_closed():
    o = Opener()
    c: SearcherCache[str] = SearcherCache(2, close=o.closed.append)
    for name in ("a", "b", "a", "c"):  # a reused (not moved to the end): a is still the oldest opened
        c.get(name, lambda: 0, o.open(name))
    assert o.opened == ["a", "b", "c"] and o.closed == ["a#1"] and len(c) == 2
    assert c.get("a", lambda: 0, o.open("a")) == "a#4" and o.closed == ["a#1", "b#2"]
    c.clear()
    assert len(c) == 0 and o.closed == ["a#1", "b#2", "c#3", "a#4"]


def test_without_close_nothing_is_closed_and_a_failed_open_holds_nothing():
    o = Opener()
    c: SearcherCache[str] = SearcherCache(1)
    c.get("a", lambda: 0, o.open("a"))
    c.get("b", lambda: 0, o.open("b"))
    assert len(c) == 1

    def boom() -> str:
        raise OSError("no index")

    with pytest.raises(OSError, match="no index"):
        c.get("c", lambda: 0, boom)
    assert c.get("b", lambda: 0, o.open("b")) == "b#2" and len(c) == 1


def test_reread_keeps_the_identity_after_opening():
    """A searcher that downloads its folder on opening (prebuilt): the identity after opening is kept, so the next
    call reuses it instead of opening (and loading) it again."""
    o, state = Opener(), {"ident": "absent"}

    def download() -> str:
        state["ident"] = "downloaded"
        return o.open("p")()

    c: SearcherCache[str] = SearcherCache(2)
    assert c.get("p", lambda: state["ident"], download, reread=True) == "p#1"
    assert c.get("p", lambda: state["ident"], download, reread=True) == "p#1"
    state["ident"] = "absent"
    c2: SearcherCache[str] = SearcherCache(2)
    c2.get("p", lambda: state["ident"], download)  # without reread: the identity before opening is kept
    assert c2.get("p", lambda: state["ident"], download) == "p#3" and o.opened == ["p", "p", "p"]
