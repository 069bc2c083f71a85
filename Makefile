PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install demo serve test test-fast lint format schema docs clean

install: $(VENV)/.installed

# The portal, and gpuctl (client/: its own package, no Django) so that .venv/bin/gpuctl works.
$(VENV)/.installed: pyproject.toml client/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]' -e ./client
	touch $@

# Everything on this machine: SQLite (the database and the Celery broker), the simulated cluster.
demo: install
	$(BIN)/python manage.py migrate --no-input
	$(BIN)/python manage.py seed_demo
	$(MAKE) serve

# The web server and a real Celery worker (with beat: the scheduling cycle, status sync, idle
# checks) beside it, started again whenever it dies (portal/supervise.py); Ctrl-C stops both.
# Debug off, as users meet it (DEBUG=1 for Django's debug pages); --insecure: runserver serves
# the static files all the same.
serve:
	@$(BIN)/python -m portal.supervise $(BIN)/celery -A portal worker --beat --loglevel=INFO --concurrency=2 & worker=$$!; \
	trap 'kill $$worker 2>/dev/null; wait $$worker' EXIT INT TERM; \
	echo "Console: http://$(HOST):$(PORT)/   API docs: http://$(HOST):$(PORT)/api/docs/   Task side: http://$(HOST):$(PORT)/healthz/workers"; \
	DEBUG=$${DEBUG:-0} $(BIN)/python manage.py runserver --insecure $(HOST):$(PORT)

test: install
	$(BIN)/python manage.py makemigrations --check --dry-run --settings portal.settings.test
	$(BIN)/python manage.py spectacular --validate --fail-on-warn --file /dev/null --settings portal.settings.test
	$(BIN)/pytest -n 2 --dist loadfile

# The tests but the slow property tests (marked `slow`): a quick check while working.
test-fast: install
	$(BIN)/pytest -n 2 --dist loadfile -m "not slow"

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The documentation site (docs/, mkdocs.yml) in strict mode: a broken link, an unknown anchor or
# a page left out of the nav fails. Built into var/, which git ignores.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir var/site

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) var
