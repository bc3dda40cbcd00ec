"""kb-anonymity test data: 10,000 raw tuples per subject program, per option.

    python benchmarks/kb.py [--rows 10000] [--k 5] [--subjects loan,shipping] [--options P-T]

Prints, per subject program and option: tracing speed (tuples/s), distinct paths, tuples
released, solve time per released tuple, coverage and total time. The subject programs and
their seeded data generators live in tests/fixtures/subjects/. Target: P-T on 10,000 tuples in
<= 10 s total (Budi et al. report 1.2-2.5 s per released tuple).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

#: P-F needs fields that can take a new value on every path (see
#: tests/testdata/test_testdata.py)
PF_OPT_OUT = {
    "loan": ["employment", "has_default"],
    "shipping": ["country", "express", "parcels", "postcode"],
    "insurance": ["smoker", "region", "claims"],
    "grading": ["late_days", "track", "honors"],
}


def main() -> None:
    from subjects.generators import SUBJECTS

    from anonkit.testdata import generate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--subjects", default=",".join(SUBJECTS))
    parser.add_argument("--options", default="P-T,P-F,I-T")
    args = parser.parse_args()
    header = (f"{'subject':<10} {'option':<6} {'rows':>6} {'trace/s':>8} {'paths':>6} "
              f"{'released':>8} {'solve ms/tuple':>14} {'coverage':>8} {'total s':>8}")
    print(header)
    print("-" * len(header))
    for name in args.subjects.split(","):
        spec, generator = SUBJECTS[name]
        raw = generator(args.rows, 1)
        for option in args.options.split(","):
            result = generate(str(ROOT / "tests" / "fixtures" / "subjects" / spec), raw, k=args.k,
                              option=option, seed=1,
                              opt_out=PF_OPT_OUT[name] if option == "P-F" else ())
            stats = result.stats
            print(f"{name:<10} {option:<6} {args.rows:>6} "
                  f"{stats['tracing_tuples_per_second']:>8.0f} {int(stats['paths']):>6} "
                  f"{len(result.release.data):>8} "
                  f"{stats['solve_seconds_per_released_tuple'] * 1000:>14.2f} "
                  f"{result.coverage:>8.1%} {result.timings['total']:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
