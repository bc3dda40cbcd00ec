"""Digests of every method's seeded release, to show that a refactoring changes no output.

Runs the command line as a steward would, with ``--seed``: the demo, ``anonymize`` with
every one-shot method on the bundled Adult sample and on a synthetic census, and
``release publish`` of two versions of a changing census with every method. Prints one
line per file written (its SHA-256) and per ``--json`` answer (the SHA-256 of its
verdicts, metrics and findings, timings and paths left out). Run it before and after a
change and compare the two outputs; any difference names the job and the file.

Run: python benchmarks/release_digests.py [--rows 3000] > digests.txt
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from anonkit.datasets import census_versions, make_census

ANONKIT = str(Path(sys.executable).with_name("anonkit"))
ADULT = Path(__file__).resolve().parents[1] / "src" / "anonkit" / "datasets" / "data" / "adult.csv"
CENSUS_ROLES = ["--qi", "age,sex,zip", "--sensitive", "disease", "--id", "id",
                "--insensitive", "*"]
ORDERED_ROLES = ["--qi", "age,hours-per-week", "--sensitive", "disease", "--id", "id",
                 "--insensitive", "*"]
KE_ROLES = ["--qi", "age,zip", "--sensitive", "salary", "--id", "id",
            "--drop", "disease", "--insensitive", "*"]
ADULT_QIS = "age,workclass,education,marital-status,occupation,race,sex,native-country"
#: (job name, input, options) for `anonkit anonymize`: the benchmark's Adult jobs first
ANONYMIZE = [
    *[(f"mondrian-adult-8qi-k{k}", "adult", ["--qi", ADULT_QIS, "--insensitive", "*",
                                             "-k", str(k)]) for k in (5, 10, 50)],
    ("mondrian-adult", "adult", ["--qi", "age,sex,race,education", "--sensitive",
                                 "salary-class", "--insensitive", "*", "-k", "10", "-l", "2",
                                 "--seed", "3"]),
    ("mondrian-census-t", "census", [*CENSUS_ROLES, "-k", "5", "-t", "0.4",
                                     "--strategy", "random", "--seed", "3"]),
    ("huffman", "census", [*CENSUS_ROLES, "--method", "huffman", "-k", "5"]),
    ("alphabetic", "census", [*ORDERED_ROLES, "--method", "alphabetic", "-k", "5",
                              "--summary", "histogram"]),
    ("alphabetic-halving", "census", [*ORDERED_ROLES, "--method", "alphabetic", "-k", "4",
                                      "--tree", "halving", "-l", "2"]),
    ("randomized", "census", [*ORDERED_ROLES, "--method", "randomized",
                                "--threshold", "0", "--accept-heuristic", "--seed", "3"]),
    ("stream-tree", "census", ["--qi", "age", "--sensitive", "disease", "--id", "id",
                               "--insensitive", "*", "--method", "stream-tree", "-k", "5"]),
    ("ke", "census", [*KE_ROLES, "--method", "ke", "-k", "4", "-e", "2000", "--seed", "3"]),
]
#: (dataset, options) for two `anonkit release publish` runs
PUBLISH = [
    ("mondrian", ["--qi", "age,sex,zip", "--sensitive", "disease", "--insensitive", "*",
                  "-k", "5", "--allow-breach", "--seed", "5"]),
    ("m-invariance", ["--qi", "age,zip", "--sensitive", "disease", "--insensitive", "*",
                      "--method", "m-invariance", "-m", "3", "--seed", "5"]),
    ("ke", ["--qi", "age,zip", "--sensitive", "salary", "--drop", "disease",
            "--insensitive", "*", "--method", "ke", "-k", "4", "-e", "2000",
            "--seed", "5"]),
    ("stream-tree", ["--qi", "age", "--sensitive", "disease", "--insensitive", "*",
                     "--method", "stream-tree", "-k", "5", "--domain", "0,127"]),
]
_VOLATILE = ("timings", "seconds", "elapsed", "output", "report", "history", "path",
             "created_at", "summary", "files", "auth", "content_digest")
_VOLATILE_KEYS = ("at",)


#: what depends on the row order, left out where a method shuffles with OS entropy
_ORDER_KEYS = ("worst_class", "content_hash")


def _steady(value: object, ordered: bool = True) -> object:
    if isinstance(value, dict):
        return {k: _steady(v, ordered) for k, v in sorted(value.items())
                if k not in _VOLATILE_KEYS and not any(word in k for word in _VOLATILE)
                and (ordered or k not in _ORDER_KEYS)}
    if isinstance(value, list):
        return [_steady(v, ordered) for v in value]
    return value


def _run(args: list[str], cwd: Path) -> dict[str, object] | None:
    done = subprocess.run([ANONKIT, *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"})
    if done.returncode != 0:
        print(f"  exit {done.returncode}: {done.stderr.strip()[:300]}", file=sys.stderr)
    try:
        return json.loads(done.stdout) if "--json" in args else None
    except json.JSONDecodeError:
        return {"stdout": done.stdout, "exit": done.returncode}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _files(folder: Path, job: str, ordered: bool = True) -> None:
    """``ordered=False``: the digest of the sorted lines, for a release whose rows are
    shuffled with operating-system entropy (a method without --seed)."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in (".csv", ".parquet", ".json"):
            data = path.read_bytes()
            if not ordered:
                data = b"\n".join(sorted(data.splitlines()))
            print(f"{job:<28} {path.relative_to(folder)!s:<40} {_digest(data)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=3000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="anonkit-digests-") as tmp:
        work = Path(tmp)
        census = work / "census.csv"
        make_census(args.rows, seed=7).data.to_csv(census, index=False)
        inputs = {"adult": ADULT, "census": census}

        demo = work / "demo"
        _run(["demo", "--output", str(demo)], work)
        for name in ("adult-release.csv", "verification.json"):
            print(f"{'demo':<28} {name:<40} {_digest((demo / name).read_bytes())}")

        for job, source, options in ANONYMIZE:
            out = work / job
            out.mkdir()
            answer = _run(["anonymize", str(inputs[source]), "-o", str(out / "release.csv"),
                           "--json", *options], work)
            _files(out, job)
            print(f"{job:<28} {'--json':<40} "
                  f"{_digest(json.dumps(_steady(answer), sort_keys=True).encode())}")

        versions = census_versions(args.rows, 2, 0.1, seed=7)
        for i, frame in enumerate(versions):
            frame.to_csv(work / f"census-v{i + 1}.csv", index=False)
        for dataset, options in PUBLISH:
            out = work / f"publish-{dataset}"
            out.mkdir()
            history = out / "history.db"
            # a fixed history secret: pseudonyms, and the row order drawn from them, repeat
            secret = work / f"{dataset}.secret"
            secret.write_text(hashlib.sha256(dataset.encode()).hexdigest() + "\n")
            secret.chmod(0o600)
            for i in range(len(versions)):
                job = f"publish-{dataset}-{i + 1}"
                answer = _run(["release", "publish", str(work / f"census-v{i + 1}.csv"),
                               "--dataset", dataset, "--key", "id", "--history",
                               str(history), "--secret-file", str(secret),
                               "-o", str(out / f"r{i + 1}.csv"),
                               "--json", *options], work)
                ordered = "--seed" in options
                if not ordered and isinstance(answer, dict):
                    answer = {k: answer[k] for k in ("passed", "verdicts", "metrics", "error")
                              if k in answer}
                steady = _steady(answer, ordered)
                print(f"{job:<28} {'--json':<40} "
                      f"{_digest(json.dumps(steady, sort_keys=True).encode())}")
            _files(out, f"publish-{dataset}", ordered="--seed" in options)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
