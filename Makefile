# seglog: one Makefile for the two commands (`make run`, `make test`) and the rest.
# Every target installs what it needs first, so each works on a fresh clone.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
EXTRAS ?= spark,objectstore,test,dev
DATA_DIR ?= data

.PHONY: install run test check bench reliability clean

install: $(STAMP)
	@sh scripts/ensure-chromium.sh
	@sh scripts/ensure-java.sh
	@sh scripts/ensure-kcat.sh

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "seglog needs Python >= 3.11; set PYTHON=/path/to/python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	@touch $(STAMP)

run: install
	$(VENV)/bin/seglog demo --data-dir $(DATA_DIR)

test: install
	# One worker per core (pytest-xdist): the server tests wait on real clients and sockets.
	$(PY) -m pytest -q -n auto

check: install
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy --strict src/seglog
	$(VENV)/bin/lint-imports

bench: install
	$(PY) -m bench.run_all

# The long reliability run (RELIABILITY.md): crash, corruption, disk-full, concurrency and
# fuzz tests with scaled-up trial counts, then atheris on every parser for ATHERIS_SECONDS.
RELIABILITY_REPORT ?= reliability-report.jsonl
ATHERIS_SECONDS ?= 60
reliability: install
	$(PY) -m pip install --quiet -e ".[$(EXTRAS),reliability]"
	rm -f $(RELIABILITY_REPORT)
	SEGLOG_RELIABILITY=long SEGLOG_RELIABILITY_REPORT=$(abspath $(RELIABILITY_REPORT)) \
	SEGLOG_CRASH_TRIALS=20000 SEGLOG_CRASH_BUDGET_S=300 SEGLOG_FUZZ_EXAMPLES=600 \
	SEGLOG_DISK_FULL_POINTS=96 \
	$(PY) -m pytest -q -p no:cacheprovider tests/crash tests/fuzz tests/unit/test_security.py \
		tests/engine/test_cleaner_concurrency.py tests/engine/test_log_concurrency.py
	$(PY) tests/fuzz/atheris_targets.py --seconds $(ATHERIS_SECONDS) --workdir .atheris \
		--report $(abspath $(RELIABILITY_REPORT))

clean:
	rm -rf $(VENV) $(DATA_DIR) .pytest_cache .mypy_cache .ruff_cache .hypothesis .atheris \
		reliability-report.jsonl
