# Two entry points for a fresh machine: `make serve` and `make test`.
# Both install from requirements-lock.txt (exact pins); pyproject.toml only states compatible ranges.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
CORE    = $(VENV)/.installed-core
STAMP   = $(VENV)/.installed
# CI's second run: the lowest versions pyproject.toml admits (requirements-lowest.txt)
LOWEST_VENV ?= .venv-lowest
LOWEST      = $(LOWEST_VENV)/.installed

.PHONY: serve test test-lowest fuzz bench install clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# `make serve`: the core only (server, CLI, fixture, in-process cluster), with pip's progress shown
$(CORE): pyproject.toml requirements-lock.txt | $(PY)
	@echo "Installing mongosim (core) into $(VENV) from requirements-lock.txt ..."
	$(PY) -m pip install -c requirements-lock.txt -e .
	touch $(CORE)

# `make test`: the project's own suite and the Spark extra (its companion distribution mongosim-spark,
# spark-plugin/, is installed from the clone in the same pip run: the extra requires it by name)
$(STAMP): pyproject.toml spark-plugin/pyproject.toml requirements-lock.txt | $(PY)
	@echo "Installing mongosim with the test and spark extras into $(VENV) (pyspark is large: a few minutes the first time) ..."
	$(PY) -m pip install -q -c requirements-lock.txt -e '.[test,spark]' -e ./spark-plugin
	touch $(STAMP) $(CORE)

install: $(STAMP)

serve: $(CORE)
	$(VENV)/bin/mongosim serve $(ARGS)

# The timeline's browser test finds a Chromium if there is one, installs Debian's only when it runs as
# root (as CI does), and otherwise skips saying why: `make test` needs no root. The mongosh tests find
# mongosh 2.x ($$MONGOSIM_MONGOSH, PATH, .tools/mongosh) or install it into .tools/mongosh with npm
# (once per clone, ~2 min), and without npm skip saying why; the Node.js driver's tests install the driver
# their lock file pins into .tools/node-driver with npm ci (tests/drivers/node_driver.py).
test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# The suite against the lowest supported pymongo (and trio, rich, crc32c): every layer encodes and
# decodes with pymongo's bson, so the whole suite runs, less tests/spark (pyspark's own versions are
# not what this run varies; its JVM session is the slowest part of the suite) and the driver
# specification's unified tests (tests/spec/test_spec.py): those files are the current spec, which
# pymongo 4.9 predates (client bulkWrite sort, backpressure labels, GridFS and session details), so
# there they would measure the old driver, not the emulator; `make test` runs them with the lock.
$(LOWEST): pyproject.toml requirements-lowest.txt
	$(PYTHON) -m venv $(LOWEST_VENV)
	@echo "Installing mongosim with the test extra and the lowest supported dependencies into $(LOWEST_VENV) ..."
	$(LOWEST_VENV)/bin/python -m pip install -q -c requirements-lowest.txt -e '.[test]'
	touch $(LOWEST)

test-lowest: $(LOWEST)
	$(LOWEST_VENV)/bin/python -m pytest -q --ignore=tests/spark --ignore=tests/teach/test_browser.py --ignore=tests/spec/test_spec.py $(PYTEST_ARGS)

# Random, longer property runs (the `nightly` hypothesis profile); `make test` is derandomized.
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=nightly QUERY_HYPOTHESIS_PROFILE=query-dev STATEFUL_EXAMPLES=1500 STATEFUL_STEPS=50 $(PY) -m pytest -q $(PYTEST_ARGS) \
	  $$(grep -rl "@given\|RuleBasedStateMachine" tests --include='*.py')

bench: $(STAMP)
	$(PY) -m benchmarks $(ARGS)

clean:
	rm -rf $(VENV) $(LOWEST_VENV)
