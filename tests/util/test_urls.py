"""A database URL as a job file saves it: without its password, in every spelling libpq
reads, the rest of the URL unchanged."""

from __future__ import annotations

import pytest

from anonkit._util.urls import masked, without_password


@pytest.mark.parametrize(("given", "saved"), [
    ("postgresql://keeper:p%40ss@db.example:5432/ward", "postgresql://keeper@db.example:5432/ward"),
    ("postgresql://keeper:p@ss@db.example/ward", "postgresql://keeper@db.example/ward"),
    ("postgresql://keeper:s3cret@/ward?host=/run/pg&password=x&port=5433",
     "postgresql://keeper@/ward?host=/run/pg&port=5433"),
    ("postgres://db.example/ward?PASSWORD=x", "postgres://db.example/ward"),
    ("postgresql://keeper@db.example/ward", "postgresql://keeper@db.example/ward"),
    ("postgresql://db.example:5432/ward", "postgresql://db.example:5432/ward"),
    ("sqlite:////srv/data/ward.db", "sqlite:////srv/data/ward.db"),
    ("sqlite:///ward.db", "sqlite:///ward.db"),
])
def test_a_saved_url_has_no_password(given: str, saved: str) -> None:
    assert without_password(given) == saved
    for secret in ("p%40ss", "p@ss", "s3cret", "password="):
        assert secret not in without_password(given).lower()


@pytest.mark.parametrize("text", [
    "postgresql://keeper:s3cret@db.example/ward",
    "cannot connect to postgresql://keeper:s3cr/et@db.example/ward: refused",
    "postgresql://keeper:s3@cret@db.example/ward",
    "postgresql+psycopg://keeper:s3cret@db.example:5432/ward?sslmode=require",
    "postgresql://keeper@db.example/ward?password=s3cret&port=1",
    "two: postgresql://a:s3cret@h/db and postgres://b:s3cret@h2/db",
])
def test_a_shown_url_has_no_password_however_malformed(text: str) -> None:
    shown = masked(text)
    assert "s3" not in shown and "cret" not in shown, shown
    assert "***" in shown and ("db.example" in shown or "h2" in shown)


def test_a_url_without_password_is_shown_as_it_is() -> None:
    for text in ("postgresql://keeper@db.example/ward", "sqlite:////srv/a@b/ward.db",
                 "see https://example.org/x?a=b"):
        assert masked(text) == text
