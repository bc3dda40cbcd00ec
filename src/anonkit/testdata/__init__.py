"""testdata."""
