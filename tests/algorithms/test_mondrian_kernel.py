"""The C kernel of Mondrian (``anonkit.algorithms._mondrian_c``): a round split over threads
gives the classes the serial kernel gives, int16 and int32 codes give the same classes, and
arrays of the wrong type, layout or shape are refused with a message, never read."""

from __future__ import annotations

import numpy as np
import pytest

import anonkit.algorithms.mondrian as mondrian
from anonkit.algorithms import _mondrian_c
from anonkit.algorithms import _mondrian_kernel as kernel
from anonkit.data.encoding import EncodedTable, encode
from anonkit.datasets import make_census
from anonkit.methods.mondrian import Mondrian
from anonkit.models import KAnonymity
from anonkit.partition import Partition


@pytest.fixture(scope="module")
def census() -> EncodedTable:
    ds = make_census(20_000, seed=3)
    return encode(ds.data, ds.schema())


def _same(a: Partition, b: Partition) -> bool:
    return (np.array_equal(a.order, b.order) and np.array_equal(a.starts, b.starts)
            and np.array_equal(a.ends, b.ends))


@pytest.mark.parametrize("strategy", ["widest", "entropy", "distinct", "random"])
def test_parallel_rounds_match_serial(census: EncodedTable, strategy: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    models = [KAnonymity(5)]
    monkeypatch.setattr(mondrian, "PARALLEL_ROWS", 10**12)
    # (one seed for both: unseeded, the random strategy draws from the system)
    serial = Mondrian(k=5, strategy=strategy, seed=11).partition(census, models)
    monkeypatch.setattr(mondrian, "PARALLEL_ROWS", 0)
    monkeypatch.setattr(kernel, "cores", lambda: 3)  # three chunks on any machine
    parallel = Mondrian(k=5, strategy=strategy, seed=11).partition(census, models)
    assert _same(serial, parallel)


@pytest.mark.parametrize("strategy", sorted(kernel.STRATEGIES.values()))
def test_int32_codes_match_int16(census: EncodedTable, strategy: int) -> None:
    """The kernel compiled for int32 codes moves rows and cuts exactly as the int16 one."""
    columns = mondrian._column_tables(census.quasi_identifiers)
    n, d = census.n_rows, len(census.quasi_identifiers)
    runs = []
    for code_type in (np.int16, np.int32):
        Xs = np.empty((2, n, d), dtype=code_type)
        Xs[0] = census.qi_matrix
        Rs = np.empty((2, n), dtype=np.int64)
        Rs[0] = np.arange(n)
        parts = kernel.first_round(Xs[0])
        done = kernel.new_done(n, 5)
        n_done, proposals = 0, []
        for seed in range(8):
            proposal = kernel.propose(Xs, Rs, columns, parts, 5, strategy, seed, 4096)
            proposals.append(proposal)
            dim, cut_le = proposal[:2]
            cut = np.where(dim >= 0, cut_le, -1)
            no = np.zeros(len(dim), bool)
            parts, n_done = kernel.advance(parts, proposal, cut, no, no, 5, False, False,
                                           done, n_done)
        runs.append((Xs.astype(np.int32), Rs, proposals))
    (X16, R16, P16), (X32, R32, P32) = runs
    assert np.array_equal(X16, X32) and np.array_equal(R16, R32)
    for a, b in zip(P16, P32, strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def _round(n: int = 10, d: int = 2, dtype: type = np.int16) -> dict[str, object]:
    X = np.zeros((2, n, d), dtype=dtype)
    X[0, :, 0] = np.arange(n) % 5
    Rs = np.zeros((2, n), np.int64)
    Rs[0] = np.arange(n)
    columns = (np.arange(5 * d, dtype=np.float64), np.arange(d + 1, dtype=np.int64) * 5,
               np.full(d, 4.0), np.full(d, 5, np.int64), np.zeros(d, bool), np.zeros(d, bool),
               np.zeros(1, np.int32), np.zeros(1, np.float64), np.zeros(d, np.int64),
               np.ones(d, np.int64))
    parts = kernel.first_round(X[0])
    proposal = (np.empty(1, np.int64), np.empty(1, np.int64), np.empty(1, np.int64),
                np.empty((1, 3, d), np.int64), np.empty((1, 3, d), np.int64),
                np.empty((1, 3, d), np.uint64))
    return {"Xs": X, "Rs": Rs, "columns": columns, "parts": parts, "proposal": proposal}


def _propose(args: dict[str, object]) -> None:
    _mondrian_c.propose(args["Xs"], args["Rs"], args["columns"], args["parts"],
                        args["proposal"], 0, 1, 2, kernel.WIDEST, 0)


def test_kernel_call_works_on_good_arrays() -> None:
    args = _round()
    _propose(args)
    dim, cut_le, _, part_lo, part_hi, _ = args["proposal"]
    assert dim[0] == 0 and cut_le[0] == 6  # codes 0 0 1 1 2 2 | 3 3 4 4
    assert part_lo[0, :, 0].tolist() == [0, 2, 3] and part_hi[0, :, 0].tolist() == [1, 2, 4]
    assert args["parts"][2][0] == 1  # the segment moved to the other copy


@pytest.mark.parametrize(("change", "error", "message"), [
    (lambda a: a.update(Xs=a["Xs"].astype(np.int64)), TypeError, "Xs must be int16 or int32"),
    (lambda a: a.update(Xs=a["Xs"].astype(np.float32)), TypeError, "Xs must be int16 or"),
    (lambda a: a.update(parts=(a["parts"][0].astype(np.int32), *a["parts"][1:])), TypeError,
     "starts must be int64, got format 'i' of 4 bytes"),
    (lambda a: a.update(Xs=np.zeros((3, 10, 2), np.int16)), ValueError, "Xs must have length 2"),
    (lambda a: a.update(Rs=a["Rs"][:, ::-1]), ValueError, "Rs must be C-contiguous"),
    (lambda a: a["Rs"].setflags(write=False), ValueError, "Rs must be writable"),
    (lambda a: a.update(Rs=[[0] * 10] * 2), TypeError, "Rs must be an array"),
    (lambda a: a.update(columns=a["columns"][:9]), TypeError, "columns must be a tuple of 10"),
    (lambda a: a["parts"][1].__setitem__(0, 11), ValueError, "partition 0 is \\[0, 11\\)"),
    (lambda a: a.update(Xs=np.zeros((2, 10, 65), np.int16)), ValueError, "at most 64"),
])
def test_kernel_refuses_bad_arrays(change: object, error: type[Exception],
                                   message: str) -> None:
    args = _round()
    change(args)  # type: ignore[operator]
    with pytest.raises(error, match=message):
        _propose(args)
