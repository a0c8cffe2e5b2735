# The daily commands (CONTRIBUTING.md). The set-up and the full run stay the README's two commands;
# the lint and test invocations are tox.ini's `commands`, run in your current environment.
# `make help` lists the targets; `make -n TARGET` prints what a target would run.

PYTHON ?= python3
DATA_DIR ?= ./data
# Extra arguments for pytest (`make test-quick PYTEST_ARGS="-x -k policies"`), and for tox's two
# pytest runs (`make test PYTEST_ARGS=-x`).
PYTEST_ARGS ?=
# The folders ruff checks and formats (tox.ini).
PY_SOURCES := python tools tests spark benches

.DEFAULT_GOAL := help
.PHONY: help build dev standalone test-quick test-slow test rust-test lint lint-rust lint-python fmt docs-check ci

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

build: ## install the package as a user gets it (the README's first command, without the broker)
	$(PYTHON) -m pip install .

dev: ## install it editable, with the test extras (after a Rust change, run it again)
	$(PYTHON) -m pip install -e '.[test]'

standalone: ## run the standalone broker on DATA_DIR (ports 6650 and 8080); after `make build`
	pulsar-rs standalone --data-dir $(DATA_DIR)

test-quick: ## the quick inner loop: every test but the slow ones
	$(PYTHON) -m pytest -m "not slow" -n 2 --dist loadgroup --durations=15 $(PYTEST_ARGS)

test-slow: ## the slow rooms and the slow tests of the quick ones
	$(PYTHON) -m pytest -m "slow and not timing" -n 3 --dist loadgroup --durations=40 $(PYTEST_ARGS)
	$(PYTHON) -m pytest -m timing --durations=10 $(PYTEST_ARGS)

test: ## everything, as CI runs it: tox -e py311 (style, Rust tests, the wheel, pytest quick then slow)
	$(PYTHON) -m tox -e py311 $(if $(PYTEST_ARGS),-- $(PYTEST_ARGS))

rust-test: ## the Rust tests of every crate, the PyO3 crate's included (it links libpython), in one build
	cargo test --release --locked --workspace

lint: lint-rust lint-python ## every style check tox runs

lint-rust: ## rustfmt and clippy with warnings as errors
	cargo fmt --all --check
	cargo clippy --release --locked --workspace --all-targets -- -D warnings

lint-python: ## ruff's lint and format, mypy, stubtest of _native.pyi (needs the extension installed)
	$(PYTHON) -m ruff check $(PY_SOURCES)
	$(PYTHON) -m ruff format --check $(PY_SOURCES)
	$(PYTHON) -m mypy
	$(PYTHON) -m mypy.stubtest pulsar_rs._native

fmt: ## format the Rust and Python sources in place
	cargo fmt --all
	$(PYTHON) -m ruff format $(PY_SOURCES)

docs-check: ## check every relative link (and #anchor) of the Markdown pages
	$(PYTHON) docs/tools/check_links.py

ci: ## what CI runs: .ci/run (installs missing tools from apt as root, then tox)
	bash .ci/run
