"""The README's Python examples run as written: every ```python block of its "Use it from
Python" section, each in a fresh namespace in an empty folder, as a reader would paste it."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "## Use it from Python"


def python_blocks() -> list[tuple[str, str]]:
    """(the heading above it, the code) of each python block of the section."""
    text = README.read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    section = text[start:end]
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```", section, flags=re.S | re.M):
        heading = re.findall(r"^### (.+)$", section[:match.start()], flags=re.M)
        blocks.append((heading[-1] if heading else SECTION, match.group(1)))
    return blocks


def test_every_method_has_an_example() -> None:
    from anonkit import methods

    code = "\n".join(block for _, block in python_blocks())
    missing = [m.name for m in methods.methods() if m.typed and f'"{m.name}"' not in code]
    assert not missing, f"no README example calls the method(s) {missing}"


@pytest.mark.parametrize(("heading", "code"), python_blocks(),
                         ids=[h for h, _ in python_blocks()])
def test_the_example_runs(heading: str, code: str, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. the secret kept beside the example's history
        exec(compile(code, f"README.md ({heading})", "exec"), {"__name__": "__readme__"})
