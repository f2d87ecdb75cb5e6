# One entry point for every task. A fresh clone needs only python3 (3.11 or 3.12) and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8888
STAMP  := $(VENV)/.installed
# The developers' environment: the course's (requirements.txt), the hub and the test tools.
ENVIRONMENT := requirements-dev.txt

.PHONY: lab test proof-status test-fast release check bench bench-startup bench-grading stability grade review requirements grade-mine new-lab prove gpu-check setup clean help learner-pack workshop workshop-release workshop-collect workshop-feedback workshop-down

help:  ## list the commands
	@grep -E '^[a-z-]+:.*## ' Makefile | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# `pip install -e .` installs the course's two packages, raylab (src/) and the grader (grader/),
# editable from this clone (pyproject.toml).
$(STAMP): $(wildcard requirements*.txt) constraints.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r $(ENVIRONMENT) -c constraints.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/jupyter labextension enable @jupyter/nbgrader >/dev/null
	$(BIN)/jupyter server extension enable nbgrader.server_extensions.validate_assignment >/dev/null
	$(BIN)/python -m raylab.env
	touch $(STAMP)

setup: $(STAMP)  ## create the virtual environment and install the pinned packages

# RAYLAB_RAY_AUTH=token: Ray's token authentication for every lab's cluster. Ray reads
# RAY_AUTH_MODE when it is imported, so it goes in JupyterLab's environment (kernels inherit it),
# with a token file only its owner can read (raylab.cluster.use_token_auth).
AUTH_ENV = $(if $(filter token,$(RAYLAB_RAY_AUTH)),RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH="$$($(BIN)/python -c 'from raylab.cluster import use_token_auth; print(use_token_auth())')")

# Learners see learner tools only: nbgrader's Create Assignment, formgrader and course list are
# switched off (page config and server extensions) for the JupyterLab that `make lab` starts.
LEARNER_CONFIG := workshop/learner-jupyter-config

# EDITION=ja opens the Japanese edition (notebooks-ja/, which make release builds from translations/ja/)
# with JupyterLab's menus in Japanese (the ja/ layer of the learner configuration sets the language
# pack's locale) and raylab's messages in Japanese (RAYLAB_LANG).
EDITION ?= en
EDITION_LANG := $(if $(filter ja,$(EDITION)),ja,en)
EDITION_DIR := $(if $(filter ja,$(EDITION)),notebooks-ja,notebooks)
EDITION_CONFIG := $(if $(filter ja,$(EDITION)),$(CURDIR)/$(LEARNER_CONFIG)/ja:)$(CURDIR)/$(LEARNER_CONFIG)

lab: $(STAMP)  ## start JupyterLab on notebooks/ (http://127.0.0.1:$(PORT)); EDITION=ja for the Japanese edition (notebooks, menus, messages); RAYLAB_RAY_AUTH=token for Ray token auth
	JUPYTER_CONFIG_PATH=$(EDITION_CONFIG) RAYLAB_LANG=$(EDITION_LANG) $(AUTH_ENV) $(BIN)/jupyter lab --ServerApp.root_dir=$(EDITION_DIR) --ServerApp.ip=127.0.0.1 \
	  --ServerApp.port=$(PORT) --no-browser --allow-root

test: $(STAMP)  ## the whole test suite (what CI runs): the proof plan first (fails at once if the misses cannot fit), then two test processes
	$(BIN)/python -m grader.proof check
	RAYLAB_PROOF_PLAN=$(CURDIR)/.grading/proof-plan.json $(BIN)/python -m pytest tests -n 2 --dist loadscope --no-loadscope-reorder

proof-status: $(STAMP)  ## what the proof must grade for this tree: stale gradings and why, this run's audits, about how long [LAB=...]
	$(BIN)/python -m grader.proof status $(LAB)

test-fast: $(STAMP)  ## the quick tier: no Ray clusters, no notebook runs
	$(BIN)/python -m pytest tests -m "not slow and not browser"

release: $(STAMP)  ## regenerate notebooks/ from solutions/ with nbgrader generate_assignment (labs in progress are left out)
	$(BIN)/python -m grader.authoring.release

new-lab: $(STAMP)  ## start a lab: make new-lab NAME=11_topic (solution skeleton, mutants file, checklist)
	$(BIN)/python -m grader.authoring.new_lab $(NAME)

prove: $(STAMP)  ## prove with no cache and record in ledger/: make prove LAB=03_checkpoints_and_report [ADDRESS=host:port]; no LAB: every lab, then the heavy test modules; TESTS=1: those modules only; MISSES=1: grade only what the ledger lacks
	$(BIN)/python -m grader.proof.prove $(LAB) $(if $(ADDRESS),--address $(ADDRESS)) $(if $(TESTS),--tests) $(if $(MISSES),--misses)

requirements: $(STAMP)  ## what each exercise requires, the checks that enforce it (visible or hidden) and the mutants that break it: make requirements [LAB=05_failures_and_retries]
	$(BIN)/python -m grader.proof.requirements $(LAB)

stability: $(STAMP)  ## does every answer get the same grade every time? make stability LAB=08_operating_on_kuberay [RUNS=10]
	$(BIN)/python -m grader.proof.stability $(LAB) --runs $(or $(RUNS),10)

check: $(STAMP)  ## run every solution notebook headless; table of lab, status, seconds
	$(BIN)/python -m grader.authoring.run_solutions

bench: $(STAMP)  ## course benchmark: per-lab seconds, peak memory, start-up share, seconds by kind of cell, the course in process floors
	$(BIN)/python -m grader.bench.labs

grade: $(STAMP)  ## grade a class: make grade SUBMISSIONS=path/to/submitted [WORKERS=2] [ADDRESS=host:port] [FULL=1: also demo cells no test reads]
	$(BIN)/python -m grader.classroom.grade $(SUBMISSIONS) $(if $(WORKERS),--workers $(WORKERS)) $(if $(ADDRESS),--address $(ADDRESS)) $(if $(FULL),--full)

review: $(STAMP)  ## release flagged grades you have looked at to the LMS export: make review WHO="student/lab ..." [OUT=.grading/class]
	$(BIN)/python -m grader.classroom.review $(WHO) $(if $(OUT),--out $(OUT))

grade-mine: $(STAMP)  ## grade your own notebook like an instructor would: make grade-mine NB=notebooks/01_x/01_x.ipynb
	$(BIN)/python -m grader.classroom.self_grade $(NB)

bench-startup: $(STAMP)  ## where an empty 2-worker fit()'s seconds go (Ray's own logs), next to the process floor
	$(BIN)/python -m grader.bench.startup

bench-grading: $(STAMP)  ## stock sequential nbgrader autograde vs the class grader: make bench-grading [LAB=05_failures_and_retries] [N=4]
	$(BIN)/python -m grader.bench.grading $(if $(LAB),--lab $(LAB)) $(if $(N),-n $(N))

gpu-check: $(STAMP)  ## before a GPU workshop: run lab 04's DDP path on CUDA, print step times and backend
	$(BIN)/python scripts/gpu_check.py

# The room's JupyterHub (docs/workshop.md "The workshop hub"). Its proxy comes from the npm registry,
# pinned in workshop/hub/package-lock.json and installed there only (Node and npm: Debian's packages).
HUB_PROXY := workshop/hub/node_modules/.bin/configurable-http-proxy

$(HUB_PROXY): workshop/hub/package.json workshop/hub/package-lock.json
	npm ci --prefix workshop/hub --no-audit --no-fund
	touch $(HUB_PROXY)

workshop: $(STAMP) $(HUB_PROXY)  ## as root: JupyterHub for a room: make workshop ROSTER=roster.txt [HUB_IP=..] [HUB_PORT=8000] [STATE=/srv/raylab-workshop] [LABS="00_lab_setup .."]
	@test -n "$(ROSTER)" || { echo "usage: make workshop ROSTER=roster.txt (one learner login a line, 'instructor: login' lines)"; exit 2; }
	$(BIN)/python -m grader.workshop.up --roster $(ROSTER) $(if $(STATE),--state $(STATE)) \
	  $(if $(HUB_IP),--ip $(HUB_IP)) $(if $(HUB_PORT),--port $(HUB_PORT)) $(if $(LABS),--labs $(LABS)) \
	  $(if $(HUB_SSL_CERT),--ssl-cert $(HUB_SSL_CERT) --ssl-key $(HUB_SSL_KEY))

workshop-release: $(STAMP)  ## as root, room running: release more labs to the exchange and the formgrader: make workshop-release LABS="03_checkpoints_and_report .." [STATE=..]
	$(BIN)/python -m grader.workshop.up --release-only $(if $(STATE),--state $(STATE)) --labs $(LABS)

workshop-collect: $(STAMP)  ## as root: collect a lab's submissions (refusing any not written by the learner it names): make workshop-collect LAB=00_lab_setup [STATE=..]
	$(BIN)/python -m grader.workshop.feedback collect $(LAB) $(if $(STATE),--state $(STATE))

workshop-feedback: $(STAMP)  ## as root, after make grade: release a lab's feedback to its learners: make workshop-feedback LAB=00_lab_setup [STATE=..]
	$(BIN)/python -m grader.workshop.feedback release $(LAB) $(if $(STATE),--state $(STATE))

workshop-down: $(STAMP)  ## as root: stop the hub, remove the room's accounts, group, cgroups and state (keeps the course folder unless PURGE=1): make workshop-down [STATE=..]
	$(BIN)/python -m grader.workshop.down $(if $(STATE),--state $(STATE)) $(if $(PURGE),--purge)

learner-pack: $(STAMP)  ## build/raylab-learner-pack.tar.gz: learner notebooks, raylab, environment, make setup/lab; no answer key; EDITION=ja: the Japanese pack (-ja.tar.gz)
	$(BIN)/python -m grader.authoring.learner_pack --edition $(EDITION)

clean:  ## remove grading work files and scratch output (keeps the venv)
	rm -rf .grading .scratch
