# flapjax: `make demo` and `make test` are the whole quickstart.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test install clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m flapjax.demo

test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
