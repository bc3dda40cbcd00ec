"""Compression anonymity (spec 003): building the code trees, the streaming counting tree,
and the information loss of each tree against single-column Mondrian.

Run: ``python benchmarks/compression.py [--quick]``. Prints three tables:

1. tree construction over 10^6 values (counting the symbols included: codes in, tree out),
   for columns with about 100, 10^4, 10^5 and 10^6 distinct values; target <= 0.5 s each;
2. the stream tree: inserting a batch of 10^6 values and emitting every value's span
   (vectorised), in values per second (target >= 1,000,000/s), and one value at a time
   (``insert``, Python) for comparison;
3. the information loss (GCP) of each tree's k-anonymous release of one column of 10^6
   ages (in tenths of a year), against the stream tree and single-column Mondrian on the
   same column, for k = 10, 100, 1000, with the whole method's time (encode, tree, release,
   verification, metrics);
4. the optimal alphabetic tree alone (Garsia--Wachs, counts given directly) on 10^5 and
   10^6 symbols with random, increasing, decreasing, V-shaped and equal counts -- the
   profiles that made the former two-stack version quadratic -- and the growth from 10^5 to
   10^6, in time and in the extension's count of its steps (n log n allows about 12x; a
   time growth <= 15x passes). ``--old PATH`` also times a former build of the extension (a
   ``_compression_c*.so`` file) at 10^5 symbols.

Times are the best of ``--repeat`` runs (3), warm.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import time
from types import ModuleType

import numpy as np
import pandas as pd
from timing import best_of

from anonkit import methods
from anonkit.algorithms import _compression_c  # type: ignore[attr-defined]
from anonkit.algorithms.compression import build_tree, garsia_wachs_depths, symbols_of
from anonkit.algorithms.stream_tree import StreamTree
from anonkit.data.schema import Schema

N = 1_000_000
TREE_TARGET = 0.5
STREAM_TARGET = 1_000_000




def columns(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "ages (normal 40 +- 12)": np.clip(np.round(rng.normal(40, 12, n)), 0, 120).astype(
            np.int64),
        "uniform 0..10^4": rng.integers(0, 10_000, n),
        "uniform 0..10^5": rng.integers(0, 100_000, n),
        "distinct (permutation)": rng.permutation(n).astype(np.int64),
    }


def tree_table(n: int, repeat: int, rng: np.random.Generator) -> list[tuple[str, ...]]:
    rows = []
    for name, values in columns(n, rng).items():
        codes = values[:, None]
        distinct = len(np.unique(values))
        for kind in ("huffman", "halving", "optimal"):
            def run(kind: str = kind, codes: np.ndarray = codes) -> object:
                _, counts, _ = symbols_of(codes)
                return build_tree(counts, kind)

            seconds, tree = best_of(run, repeat)
            status = "ok" if seconds <= TREE_TARGET else "SLOW"
            rows.append((name, f"{distinct:,}", kind, f"{seconds:.3f}",
                         f"{tree.cost() / n:.3f}", status))  # type: ignore[attr-defined]
    return rows


def stream_table(n: int, repeat: int, rng: np.random.Generator) -> list[tuple[str, ...]]:
    rows = []
    for depth in (7, 16, 20):
        high = (1 << depth) - 1
        values = rng.integers(0, high + 1, n)

        def batch(values: np.ndarray = values, high: int = high) -> object:
            tree = StreamTree(10, (0, high))
            tree.insert_many(values)
            return tree.spans_of(values)

        seconds, _ = best_of(batch, repeat)
        rate = n / seconds
        rows.append((f"0,{high}", f"batch of {n:,}: insert + every span", f"{seconds:.3f}",
                     f"{rate:,.0f}", "ok" if rate >= STREAM_TARGET else "SLOW"))
        few = values[:20_000]

        def one_by_one(few: np.ndarray = few, high: int = high) -> object:
            tree = StreamTree(10, (0, high))
            return [tree.insert(int(v)) for v in few]

        seconds, _ = best_of(one_by_one, 1)
        rows.append((f"0,{high}", f"insert() one at a time ({len(few):,})", f"{seconds:.3f}",
                     f"{len(few) / seconds:,.0f}", "-"))
    return rows


def gcp_table(n: int, ks: tuple[int, ...], rng: np.random.Generator) -> list[tuple[str, ...]]:
    # ages in tenths of a year (integers, so the stream tree takes them too): ~1,000
    # distinct values, enough for the trees to differ
    ages = np.clip(np.round(rng.normal(400, 120, n)), 0, 1200).astype(np.int64)
    df = pd.DataFrame({"age": ages})
    schema = Schema.from_roles(df, ["age"])
    rows = []
    for k in ks:
        runs = [("huffman", {"k": k}), ("alphabetic", {"k": k, "tree": "halving"}),
                ("alphabetic", {"k": k, "tree": "optimal"}),
                ("stream-tree", {"k": k, "domain": (0, 1200)}), ("stream-tree", {"k": k}),
                ("mondrian", {"k": k})]
        for name, options in runs:
            method = methods.get(name)
            t0 = time.perf_counter()
            release = method.anonymize(df, schema, method.parse_options(options, "python"))
            seconds = time.perf_counter() - t0
            label = name + (f" ({options['tree']})" if "tree" in options else "")
            if name == "stream-tree":
                label += " (domain 0,1200)" if "domain" in options else " (data's domain)"
            rows.append((str(k), label, f"{release.metrics['gcp'] * 100:.3f} %",
                         f"{release.n_classes:,}", str(int(release.verdicts[0].measured)),
                         f"{seconds:.2f}"))
    return rows


def count_profiles(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    half = np.arange(n // 2, 0, -1)
    return {"random 1..10^9": rng.integers(1, 10**9, n),
            "increasing": np.arange(1, n + 1),
            "decreasing": np.arange(n, 0, -1),
            "V-shaped": np.concatenate([half, np.arange(1, n - len(half) + 1)]),
            "equal": np.ones(n, dtype=np.int64)}


def load_extension(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("_compression_c", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def alphabetic_table(sizes: tuple[int, int], repeat: int, rng: np.random.Generator,
                     old: ModuleType | None) -> list[tuple[str, ...]]:
    small, large = sizes
    rows = []
    for name in count_profiles(small, rng):
        seconds, work = {}, {}
        for n in sizes:
            counts = np.ascontiguousarray(count_profiles(n, rng)[name], dtype=np.int64)
            seconds[n], depths = best_of(lambda c=counts: garsia_wachs_depths(c), repeat)
            # the extension's own count of its steps: the growth without the memory hierarchy
            work[n] = _compression_c.gw_depths(counts, np.empty(n, dtype=np.int64))
            bits = float((counts * depths).sum()) / counts.sum()  # type: ignore[operator]
        old_cell = "-"
        if old is not None:
            counts = np.ascontiguousarray(count_profiles(small, rng)[name], dtype=np.int64)
            out = np.empty(small, dtype=np.int64)
            old_seconds, _ = best_of(lambda c=counts, o=out: old.gw_depths(c, o), 1)
            old_cell = f"{old_seconds:.3f}"
        growth = seconds[large] / max(seconds[small], 1e-9)
        work_growth = work[large] / work[small]
        rows.append((name, old_cell, f"{seconds[small]:.3f}", f"{seconds[large]:.3f}",
                     f"{growth:.1f}x", f"{work_growth:.1f}x",
                     "ok" if growth <= 15 else "time ABOVE 15x", f"{bits:.2f}"))
    return rows


def show(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^5 values, one repetition")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--old", metavar="PATH",
                        help="a former build of _compression_c to time at the smaller size")
    args = parser.parse_args()
    n = 100_000 if args.quick else N
    repeat = 1 if args.quick else args.repeat
    rng = np.random.default_rng(2026)
    print(f"compression anonymity, {n:,} values, load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    show(f"1. code trees over {n:,} values (count symbols + build; target <= {TREE_TARGET} s)",
         ("column", "distinct", "tree", "seconds", "bits/value", "status"),
         tree_table(n, repeat, rng))
    show(f"2. stream tree, k = 10 (target >= {STREAM_TARGET:,} values/s)",
         ("domain", "what", "seconds", "values/s", "status"), stream_table(n, repeat, rng))
    show(f"3. information loss (GCP) of one column ({n:,} normal ages in tenths of a year, "
         f"~1,000 distinct)",
         ("k", "method", "GCP", "classes", "measured k", "seconds (whole method)"),
         gcp_table(n, (10, 100, 1000), rng))
    sizes = (n // 10, n)
    old = load_extension(args.old) if args.old else None
    show(f"4. optimal alphabetic tree alone (Garsia-Wachs), {sizes[0]:,} and {sizes[1]:,} "
         f"symbols",
         ("counts", f"old, {sizes[0]:,}", f"new, {sizes[0]:,}", f"new, {sizes[1]:,}",
          "time growth", "work growth", "status", "bits/count"),
         alphabetic_table(sizes, repeat, rng, old))


if __name__ == "__main__":
    main()
