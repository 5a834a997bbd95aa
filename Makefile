# The course's single entry point. `make lab` to learn, `make test` to check everything.
# Without make (Windows): `py course.py lab`, `py course.py test` do the same (see course.py).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.qlesson-installed
# Where torch comes from: PyTorch's CPU-only wheels (no CUDA libraries). With an NVIDIA GPU:
# `make clean && make setup TORCH_INDEX=pypi` takes PyPI's (CUDA) build. Unreachable: PyPI's, with a message.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
export TORCH_INDEX
export PYTHONHASHSEED := 0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup lab app test test-latest doctor site grade lint bench lessons execute exercises clean mutate engines

setup: $(STAMP)

# torch first, alone, from $(TORCH_INDEX); then the pins under the lock; then qlesson (course.py)
$(STAMP): requirements/requirements.txt requirements/lock.txt pyproject.toml
	$(PYTHON) course.py setup

ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
# Your own copies of the notebooks live in workspace/ (git ignores it): edit them freely. What a
# course update changed (new.NN_*.ipynb beside an edited copy) is printed before JupyterLab's log and again once it is up.
lab: $(STAMP)
	$(PY) -m qlesson lab

# Lesson 07's calculator alone (app/calculator.ipynb: no code, no lesson text), served by Voila on
# localhost with one pre-heated kernel, so the widget shows a second or two after the page loads.
APP_PORT ?= 8866
app: $(STAMP)
	@echo "qlesson calculator: open http://127.0.0.1:$(APP_PORT)/ (Ctrl-C to stop)"
	$(PY) -m qlesson.course.app --port=$(APP_PORT)

# One thread per process: two xdist workers, each with its own kernel, on two cores (more threads
# only fight over the cores). tests/test_portable.py re-runs the model notebooks on a second float path.
test: $(STAMP)
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -n 2 --dist loadfile --nbval

# Is the set-up sound? One line per check (Python, venv, each pin, kernel, Chromium, disk), a fix per FAIL.
doctor:
	@$(PYTHON) course.py doctor

# The lessons as static HTML with their stored outputs (no execution): site/index.html, for any static host.
SITE ?= site
site: $(STAMP)
	$(PY) -m qlesson.course.site $(SITE)

# The suite against the newest releases of the direct dependencies, in .venv-latest (not in CI).
test-latest:
	$(PYTHON) course.py latest

# Grade your exercises: done / to do / failing per exercise. `make grade 02` for one exercise,
# `make grade detail` (or `make grade 02 detail`) for the full messages. Exit code 0 when nothing
# fails (unfinished is fine), 1 when a task fails. -I: the current folder and PYTHON* imports nothing.
ifeq (grade,$(firstword $(MAKECMDGOALS)))
GRADE_ARGS := $(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS))
$(eval $(GRADE_ARGS):;@:)
endif
grade: $(STAMP)
	$(PY) -I -m qlesson grade $(patsubst detail,--detail,$(GRADE_ARGS))

# One-line mutants of the checked modules, each run against its fast tests (by hand, not part of
# `make test`: 30 to 40 minutes). A surviving mutant is a missing test or an equivalent change.
mutate: $(STAMP)
	$(PY) tests/mutate.py

# ruff, then each lesson's words, run time and honest time against its stated time (python -m qlesson stats)
lint: $(STAMP)
	$(VENV)/bin/ruff check course.py qlesson tests notebooks exercises
	$(VENV)/bin/ruff format --check course.py qlesson tests notebooks exercises
	$(PY) -m qlesson stats

# Optional, lesson 11: llama-cpp-python (pyproject's extra `engines`), built from source by pip once (5-13 minutes
# on 2 cores; pip caches the wheel). Needs cmake and a C++ compiler: without them, one line naming the packages.
engines: $(STAMP)
	$(PYTHON) course.py engines

bench: $(STAMP)
	$(PY) -m qlesson.bench quantize

# Authors: lessons are written as notebooks/NN_*.py (jupytext); this writes each notebook from
# its source and executes it in place, the only way stored outputs are made. N=03 for one.
lessons: $(STAMP)
	$(PY) -m qlesson.course.notebooks build $(N)

execute: lessons

# Authors: exercise sources exercises/solutions/NN_*.py -> executed solutions -> learner notebooks.
exercises: $(STAMP)
	$(PY) -m qlesson.course.exercises build $(N)

clean:
	rm -rf $(VENV) .venv-latest
