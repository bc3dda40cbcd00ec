"""Test data that keeps a program's behaviour (kb-anonymity, Budi et al. 2011): generate and
write."""


from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from anonkit._util.options import as_list, parse_pairs
from anonkit.data.write import output_format
from anonkit.errors import InputError
from anonkit.jobs.common import (
    Columns,
    PathText,
)
from anonkit.jobs.outputs import refuse_overwrites
from anonkit.testdata import Limits, TestData, generate
from anonkit.testdata.report import write_html as write_testdata_html
from anonkit.verify import write_release


def generate_testdata(program: str, data: PathText, k: int, option: str = "P-T", *,
                      output: PathText, report: PathText | None = None,
                      seed: int | None = None, types: Mapping[str, str] | Sequence[str] = (),
                      pf_scope: str = "bucket", opt_out: Columns = (),
                      field_choice: str = "largest", it_mode: str = "equal",
                      time_limit: float = 2.0, max_decisions: int = 2000,
                      workers: int | None = None) -> TestData:
    """Behaviour-preserving test data for ``program`` (``FILE.py:FUNCTION``) from the raw
    table ``data`` (see :func:`anonkit.testdata.generate`). ``output`` and ``report`` are
    where :func:`write_testdata` will write the tuples and the report (checked now, before
    the long run). ``types``: declared field types, by column or as
    ``COLUMN=TYPE`` texts."""
    program_file = program.rpartition(":")[0] or program
    refuse_overwrites({"input": data},
                      [(Path(output), "release"),
                       *([(Path(report), "report")] if report is not None else [])],
                      [(Path(program_file), "the program under test")])
    if time_limit <= 0 or max_decisions < 1:
        raise InputError("--time-limit must be positive and --max-decisions at least 1")
    declared = dict(types) if isinstance(types, Mapping) else parse_pairs(types, "type")
    result = generate(program, data if isinstance(data, str) else Path(data), k, option,
                      types=declared, pf_scope=pf_scope, opt_out=as_list(opt_out),
                      field_choice=field_choice, it_mode=it_mode, seed=seed,
                      limits=Limits(time_limit=time_limit, max_decisions=max_decisions),
                      workers=workers)
    return result


def write_testdata(result: TestData, output: PathText, *, report: PathText | None = None,
                   program: str = "", neutralize_formulas: bool = False,
                   data: PathText | None = None, command: str | None = None) -> Path:
    """Write the released tuples of ``result``, then its HTML report when ``report`` is
    given (``program``: the ``FILE.py:FUNCTION`` it is about; ``data``, the raw table's
    file, and ``command``, for its provenance); an :class:`InputError`
    (nothing written) when none could be released. ``neutralize_formulas``: see
    :func:`anonkit.verify.write_release`."""
    if len(result.release.data) == 0:
        reasons = sorted({b.reason for b in result.buckets if b.reason})
        raise InputError(f"no tuple could be released (nothing written): "
                         f"{'; '.join(reasons[:3]) or 'no path was traced'}")
    release = result.release
    if output_format(output) == "csv":
        # a float column whose values happen to be whole would read back as integers
        release.data = release.data.apply(
            lambda c: c.map(lambda v: repr(float(v))) if c.dtype.kind == "f" else c)
    written = write_release(release, output, neutralize_formulas=neutralize_formulas)
    if report is not None:
        try:
            write_testdata_html(result, program, report,
                                data=str(data) if data is not None else None,
                                command=command)
        except BaseException:
            written.unlink(missing_ok=True)  # both files or neither
            raise
    return written
