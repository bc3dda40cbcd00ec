"""Where the tests' files are, whichever folder a test module sits in."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
#: the workplace's public data (UCI Adult as UCI ships it), beside the repository
SHARED_DATA = REPO.parent / "shared" / "data"
