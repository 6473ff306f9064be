# shrinker — every target makes its own environment (.venv) first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup plan test test-fast bench regen gpu-bundle verify-env verify clean-cache

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)  ## create .venv with shrinker and its dependencies

plan: $(STAMP)  ## the main job: fetch the pinned upstream, plan, apply every batch, verify
	$(BIN)/shrink upstream fetch
	$(BIN)/shrink plan
	@# A batch whose gate fails is rolled back and reported (reports/deepseek/v<version>/batch-N.md);
	@# the tree keeps every batch that passed, and verify checks that tree. The verify environment
	@# installs (network) while apply works (CPU): apply never reads it, so its result cannot differ.
	@mkdir -p build
	$(BIN)/shrink verify env > build/verify-env.log 2>&1 & env=$$!; \
	$(BIN)/shrink apply --all || echo "apply: a batch was rolled back (see reports/); verifying what passed"; \
	wait $$env || { cat build/verify-env.log; exit 1; }
	$(BIN)/shrink verify
	$(BIN)/shrink report index

test: $(STAMP)  ## all tests (integration tests download the pinned upstream once, cached)
	$(BIN)/pytest -q

test-fast: $(STAMP)  ## unit tests only (no upstream download)
	$(BIN)/pytest -q -m "not upstream"

verify-env: $(STAMP)  ## the pinned release's verify environment (.venv-verify): torch + what sglang imports (once, ~3 min)
	$(BIN)/shrink verify env

verify: verify-env  ## the work tree against upstream -> reports/deepseek/v<pinned version>/verify.{json,md}
	$(BIN)/shrink verify

regen: $(STAMP)  ## walk upstream releases to the newest (TO=pypi:sglang==X to choose): reports, exit 1 if a person is needed
	$(BIN)/shrink regen $(if $(TO),--to $(TO),); rc=$$?; $(BIN)/shrink report index; exit $$rc

gpu-bundle: $(STAMP)  ## what the GPU machine needs for `shrink verify --gpu`, in .gpu-bundle/ship
	$(BIN)/shrink gpu-bundle --which pruned

bench: $(STAMP)  ## speed and memory figures into reports/bench/
	$(BIN)/python -m shrinker.bench

clean-cache:  ## drop parse caches (keeps the downloaded upstream)
	rm -rf upstream/cache/parse
