# Two entry points for a fresh machine: `make serve` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: serve test fuzz bench install clean browser
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

$(STAMP): pyproject.toml requirements-lock.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c requirements-lock.txt -e '.[test,spark]' -e ./spark-plugin
	touch $(STAMP)

install: $(STAMP)

serve: $(STAMP)
	$(VENV)/bin/mongosim serve $(ARGS)

# The timeline page is checked in a real headless Chromium (Debian's chromium + chromium-driver).
browser:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || \
	  { echo "installing chromium + chromium-driver for the timeline browser test"; \
	    $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium chromium-driver; }

test: $(STAMP) browser
	$(PY) -m pytest $(PYTEST_ARGS)

# Random, longer property runs (the `nightly` hypothesis profile); `make test` is derandomized.
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=nightly QUERY_HYPOTHESIS_PROFILE=query-dev STATEFUL_EXAMPLES=1500 STATEFUL_STEPS=50 $(PY) -m pytest -q $(PYTEST_ARGS) \
	  $$(grep -rl "@given\|RuleBasedStateMachine" tests --include='*.py')

bench: $(STAMP)
	$(PY) -m benchmarks $(ARGS)

clean:
	rm -rf $(VENV)
