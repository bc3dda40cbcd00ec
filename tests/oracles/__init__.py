"""Reference implementations the tests (and the benchmarks, as peers) compare anonkit's fast
paths with, one module per system: each is the paper's or the notebook's rule written
plainly, slowly and obviously. They live here, not in the package: nothing a user runs
depends on them."""
