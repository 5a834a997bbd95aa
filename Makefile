# The course's single entry point. `make lab` to learn, `make test` to check everything.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.qlesson-installed
export PYTHONHASHSEED := 0
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup lab app test grade lint bench lessons execute exercises clean

setup: $(STAMP)

$(STAMP): requirements/requirements.txt requirements/lock.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first and exactly: a looser spec pulls a multi-GB CUDA build
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements/requirements.txt -c requirements/lock.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
# Your own copies of the notebooks live in workspace/ (git ignores it): edit them freely.
lab: $(STAMP)
	$(PY) -m qlesson lab

# The calculator as a standalone page (no code shown), served by Voila on localhost.
APP_PORT ?= 8866
app: $(STAMP)
	@echo "qlesson calculator: open http://127.0.0.1:$(APP_PORT)/ (Ctrl-C to stop)"
	$(VENV)/bin/voila notebooks/07_calculator.ipynb --no-browser --port=$(APP_PORT) --Voila.ip=127.0.0.1

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile --nbval

# Grade your exercises: a score table, exit code 0 only when every task passes.
grade: $(STAMP)
	$(PY) -m qlesson grade

lint: $(STAMP)
	$(VENV)/bin/ruff check qlesson tests notebooks exercises
	$(VENV)/bin/ruff format --check qlesson tests notebooks exercises

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
	rm -rf $(VENV)
