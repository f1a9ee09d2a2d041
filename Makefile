# The book's two commands: `make book` and `make test`. Both create .venv on first use.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

# The demo profile and the tests never touch the network: hub calls fail fast offline instead
# of retrying for minutes, and CLIPTokenizer.from_pretrained(hub_id) cannot silently come back empty.
OFFLINE := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

.PHONY: book test full rehearsal venv benchmarks mutation clean

venv: $(STAMP)

$(STAMP): requirements.txt requirements-nodeps.txt requirements-lock.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "vlbias needs Python 3.11 (set PYTHON=/path/to/python3.11)")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt -c requirements-lock.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# `make book SOLUTIONS=1`: the instructors' build, with the exercises' solutions shown
SOLUTIONS ?= 0

# `make book JOBS=1`: the notebooks one after another (default: as many at once as the machine has cores)
JOBS ?=

book: $(STAMP)
	$(OFFLINE) VLBIAS_SOLUTIONS=$(SOLUTIONS) $(PY) -m vlbias run --profile demo $(if $(JOBS),--jobs $(JOBS))

# `make test` runs independent tests on every core (pytest-xdist); TEST_WORKERS=1 runs them in one process;
# it ends with the 20 slowest tests, so a slow CI run says where its time went
TEST_WORKERS ?= auto

test: $(STAMP)
	$(OFFLINE) $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=20

# The papers' models and data on a GPU (see README). `make full PART=2` runs Part II only;
# run `python -m vlbias plan --profile full` first.
full: $(STAMP)
	$(PY) -m vlbias run --profile full $(if $(PART),--part $(PART))

# The full profile's dress rehearsal (issue 24; see README): random-weight checkpoints in a
# hub mirror of its own and small data, then the preflight, precompute on a local Ray instance and every
# notebook, offline, with only the sizes of params/rehearsal.yml changed. Tens of GB in REHEARSAL.
# SET passes --set to plan, precompute and run: `make rehearsal PART=4 SET=half=false` draws Part IV
# in float32: SD 1.4 drew 7 times as fast as in float16, in batches of 8, on a CPU without float16
# arithmetic (benchmarks/cpu_half.py; benchmarks/README.md). The rehearsal proper keeps the profile's float16.
REHEARSAL ?= rehearsal
REHEARSAL_SETS = $(foreach s,$(SET),--set $(s))
# CPU=1 builds the generative vision-language models shallow, at full width, so that 01d, 02d and 04b's VLM
# annotators finish on a CPU (vlbias.rehearsal.CPU_DEPTH_REDUCTIONS, with why); a GPU rehearsal leaves it out.
REHEARSAL_ENV := $(OFFLINE) HF_HOME=$(abspath $(REHEARSAL))/mirror VLBIAS_DATA_DIR=$(abspath $(REHEARSAL))/data VLBIAS_CACHE_DIR=$(abspath $(REHEARSAL))/cache
rehearsal: $(STAMP)
	$(OFFLINE) $(PY) -m vlbias rehearsal build $(REHEARSAL)/mirror $(if $(PART),--part $(PART)) $(if $(CPU),--cpu)
	$(OFFLINE) $(PY) -m vlbias rehearsal data $(REHEARSAL)/data
	$(REHEARSAL_ENV) $(PY) -m vlbias plan --profile rehearsal $(if $(PART),--part $(PART)) $(REHEARSAL_SETS)
	$(REHEARSAL_ENV) $(PY) -m vlbias precompute --profile rehearsal $(if $(PART),--part $(PART)) $(REHEARSAL_SETS)
	$(REHEARSAL_ENV) $(PY) -m vlbias run --profile rehearsal $(if $(PART),--part $(PART)) $(REHEARSAL_SETS)

benchmarks: $(STAMP)
	$(OFFLINE) $(PY) benchmarks/run_all.py

# Mutation testing of the measures, the foil construction, the CADS schedule and the cache (slow:
# one pytest start per mutant; not part of `make test`). MODULES=vlbias.cache narrows it,
# ONLY=survivors re-tests the survivors after new tests, ONLY=untested resumes; see CONTRIBUTING.
MODULES ?=
ONLY ?= all
mutation: $(STAMP)
	$(PY) -m pip install --quiet -r requirements-dev.txt -c requirements-lock.txt
	$(OFFLINE) PATH="$(abspath $(VENV))/bin:$$PATH" nice -n 10 $(PY) benchmarks/mutation/run_mutation.py --only $(ONLY) $(MODULES)

clean:
	rm -rf _build book/generated outputs/demo outputs/rehearsal mutants
