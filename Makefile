# flapjax: `make demo` and `make test` are the whole quickstart.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow test-all docs install install-sb3 clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e ".[dev,rl,render]"
	touch $(STAMP)

install: $(STAMP)

# Stable-Baselines3 (flapjax.tasks.sb3_vec_env) and torch, whose tests then run
# in `make test`. TORCH picks the build: plain `torch` may be a CUDA build of
# several GB; on a CPU-only machine pass a CPU build, e.g. TORCH="torch==2.13.0"
# where that file is cached, or install torch's CPU wheel first.
TORCH ?= torch
SB3_STAMP := $(VENV)/.installed-sb3
$(SB3_STAMP): $(STAMP)
	$(PY) -m pip install --quiet "$(TORCH)"
	$(PY) -m pip install --quiet -e ".[sb3]"
	touch $(SB3_STAMP)

install-sb3: $(SB3_STAMP)

demo: $(STAMP)
	$(PY) -m flapjax.demo

# The everyday suite: every formula, bad-input check and notebook. Its
# programs are short, so XLA compiles them without LLVM optimization (half
# the compile time; see tests/conftest.py).
test: $(STAMP)
	FLAPJAX_TEST_XLA_FLAGS="--xla_cpu_use_fusion_emitters=false --xla_backend_optimization_level=0" \
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m "not slow"

# Long flights, identification runs end to end, coverage over noise seeds.
test-slow: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m slow

test-all: test test-slow

docs: $(STAMP)
	PDOC_ALLOW_EXEC=1 $(PY) -m pdoc -o docs/api flapjax flapjax.sim flapjax.control flapjax.tasks flapjax.identify flapjax.identify.flapper flapjax.identify.multirotor flapjax.runs flapjax.data flapjax.evaluate
	@echo "API reference: docs/api/index.html"

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
