# Two entry points for a fresh machine: `make demo` and `make test`.
# Each creates .venv with python3 -m venv and installs what it needs with pip.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip

.PHONY: demo test lint bench postgres chromium clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Byte-compile the package once: where PYTHONDONTWRITEBYTECODE is set, an editable
# install would otherwise recompile every module on every start of the command. The
# install also compiles the C extensions into src/: a change to their sources installs again.
BUILD_INPUTS := pyproject.toml setup.py $(wildcard src/anonkit/*.c src/anonkit/*/*.c)
$(VENV)/.installed-demo: $(BUILD_INPUTS) | $(BIN)/python
	$(PIP) install --quiet -e .
	$(BIN)/python -m compileall -q src
	touch $@

$(VENV)/.installed-test: $(BUILD_INPUTS) | $(BIN)/python
	$(PIP) install --quiet -e '.[test,bench]'
	$(BIN)/python -m compileall -q src
	touch $@ $(VENV)/.installed-demo

demo: $(VENV)/.installed-demo
	$(BIN)/anonkit demo --output anonkit-demo

# The history tests run against a real PostgreSQL server: install it from Debian's
# packages when this machine has none (the test suite starts a throwaway cluster).
postgres:
	@if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		echo "installing PostgreSQL from Debian's packages"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null; \
	fi

# The web app's tests drive a real browser: Debian's chromium, installed when missing.
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
		echo "installing chromium from Debian's packages"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

test: $(VENV)/.installed-test postgres chromium
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/python -m pytest -q

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/mondrian.py
	$(BIN)/python benchmarks/history.py
	$(BIN)/python benchmarks/global_recoding.py

clean:
	rm -rf $(VENV) anonkit-demo .pytest_cache .ruff_cache .hypothesis
