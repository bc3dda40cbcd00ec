"""The shared threads: work spread over the cores gives what a plain loop gives, errors
come back to the caller, and a caller that is itself a pool thread still finishes."""

from __future__ import annotations

import pytest

from anonkit._util import parallel as _parallel
from anonkit._util.parallel import in_background, on_all_cores


def test_on_all_cores_is_the_plain_loop_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parallel, "cores", lambda: 3)
    items = list(range(20))
    assert on_all_cores(lambda x: x * x, items, cost=[x % 7 for x in items]) == \
        [x * x for x in items]


def test_on_all_cores_raises_what_an_item_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_parallel, "cores", lambda: 2)

    def work(x: int) -> int:
        if x == 3:
            raise ValueError("item 3")
        return x

    with pytest.raises(ValueError, match="item 3"):
        on_all_cores(work, list(range(6)), cost=[1] * 6)


def test_on_all_cores_inside_a_pool_thread_finishes(monkeypatch: pytest.MonkeyPatch) -> None:
    """On two cores the pool has one thread; when that thread is the caller, its helper
    never starts and the caller does every item."""
    monkeypatch.setattr(_parallel, "cores", lambda: 2)
    outer = in_background(on_all_cores, lambda x: x + 1, [1, 2, 3], [1, 1, 1])
    assert outer.result(timeout=10) == [2, 3, 4]
