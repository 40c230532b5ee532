# Two commands: `make run` (the demo, on SQLite and a filesystem broker) and
# `make test`. Only Python 3.11+ is needed; everything else is installed here.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: run test lint format messages demo migrate system-deps browser ldap clean help

help:
	@echo "make run    - set up and start the demo (web, workers, beat, replay) on http://127.0.0.1:8000/"
	@echo "make test   - set up and run the test suite"
	@echo "make lint   - ruff (lint + format check), the layers (import-linter), the migrations check and the translations"
	@echo "make messages - extract the interface's strings into locale/ and compile the catalogues"

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed (found %s)" % sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	@touch $@

$(VENV)/.installed-s3: requirements-demo-s3.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-demo-s3.txt
	@touch $@

$(VENV)/.installed-dev: requirements-dev.txt requirements-demo-s3.txt requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	@touch $@

migrate: $(VENV)/.installed
	$(BIN)/python manage.py migrate --no-input

demo: migrate
	$(BIN)/python manage.py demo

# The demo's processes: the Procfile's, with its object store (s3) only when WEBARCHIVE_DEMO_S3=1.
DEMO_S3 := $(filter 1 true yes on,$(WEBARCHIVE_DEMO_S3))
PROCESSES = $(shell sed -n 's/^\([a-z0-9]*\):.*/\1/p' Procfile | grep -vx s3) $(if $(DEMO_S3),s3)

run: demo browser $(if $(DEMO_S3),$(VENV)/.installed-s3)
	@echo
	@echo "  The web archive is starting on http://$${WEBARCHIVE_HOST:-127.0.0.1}:$${WEBARCHIVE_PORT:-8000}/"
	@echo "  Log in with one of the demo accounts above. Ctrl-C stops everything."
	@echo "  The test website for URL checks: http://127.0.0.1:$${WEBARCHIVE_TESTSITE_PORT:-8001}/"
	@echo "  Replay of the archive (pywb): $${REPLAY_URL:-http://127.0.0.1:8080/}$${REPLAY_COLLECTION:-archive}/"
	$(if $(DEMO_S3),@echo "  Object store (SeaweedFS, storage node node-s3): http://127.0.0.1:$${WEBARCHIVE_DEMO_S3_PORT:-8333}/")
	@echo
	$(BIN)/honcho start -f Procfile $(PROCESSES)

# System packages used by some tests: slapd (LDAP login against a real
# directory), chromium (browser tests), ffmpeg (a stream that plays back from
# replay), and the headers python-ldap compiles against. Installed with
# apt-get where the machine allows it; elsewhere only the tests that need them
# are skipped, and they say why.
system-deps:
	@bash scripts/install-system-deps

# Chromium, for browser capture (pages built by script); without it such pages are stored unrendered.
browser:
	@bash scripts/install-system-deps --browser-only

ldap: $(VENV)/.installed system-deps
	@if [ -e /usr/include/ldap.h ] && [ -e /usr/include/sasl/sasl.h ]; then \
		$(BIN)/pip install --quiet -r requirements-ldap.txt; \
	else \
		echo "note: OpenLDAP/SASL headers missing: LDAP login is not installed and its tests will be skipped"; \
	fi

test: $(VENV)/.installed-dev ldap
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev system-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python manage.py makemigrations --check --dry-run --no-input
	$(BIN)/python scripts/translations.py check

# The translation catalogues (locale/fr): extract the strings (GNU gettext's xgettext), compile the .mo.
messages: $(VENV)/.installed-dev
	$(BIN)/python scripts/translations.py update

format: $(VENV)/.installed-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .ruff_cache
