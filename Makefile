# One-command set-up: every target builds .venv from the pinned lock file first.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= reports/out

.PHONY: venv test test-fast report report-only bench-smoke lint clean

$(STAMP): requirements/lock.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip==25.3
	$(BIN)/pip install -q -r requirements/lock.txt
	$(BIN)/pip install -q --no-deps -e .
	touch $(STAMP)

venv: $(STAMP)

## The test command: the whole suite (verification, memory, report), as CI runs it.
test: $(STAMP)
	$(BIN)/python -m pytest -q

## Everything but the slow tier.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

## The main job: train on the embedded corpus, run the suites, benchmark, build the HTML report.
## Options: make report TINYSHAKESPEARE=path/to/input.txt ASV=1 (record this commit's asv results).
report: $(STAMP)
	$(BIN)/python -m reports.main_job --out $(OUT) $(if $(ASV),--asv) \
	  $(if $(TINYSHAKESPEARE),--tinyshakespeare $(TINYSHAKESPEARE))

## Rebuild the HTML from the artifacts that already exist (no re-run).
report-only: $(STAMP)
	$(BIN)/python -m reports.build --out $(OUT)

## asv: every benchmark once, 1 BLAS thread, 2 peer rounds; checks the suite runs, saves nothing.
bench-smoke: $(STAMP)
	$(BIN)/asv machine --yes >/dev/null
	MINITORCH_BENCH_THREADS=1 MINITORCH_BENCH_ROUNDS=2 ASV_PYTHONPATH=$(CURDIR) \
	  $(BIN)/asv run --python=same --quick --show-stderr

.PHONY: bench bench-compare
## Record this commit's asv results (2 BLAS threads), then the interleaved peer table.
bench: $(STAMP)
	$(BIN)/asv machine --yes >/dev/null
	ASV_PYTHONPATH=$(CURDIR) $(BIN)/asv run --python=same --show-stderr \
	  --set-commit-hash=$$(git rev-parse HEAD)
	$(BIN)/python -m benchmarks.compare_peers

## Fail if HEAD is slower than BENCH_BASE by > BENCH_FACTOR: make bench-compare BENCH_BASE=HEAD~1
BENCH_BASE ?= HEAD~1
BENCH_FACTOR ?= 1.2
bench-compare: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH bash benchmarks/compare.sh $(BENCH_BASE) HEAD $(BENCH_FACTOR)

lint: $(STAMP)
	$(BIN)/ruff check minitorch verification memory benchmarks reports

clean:
	rm -rf $(VENV) $(OUT) reports/artifacts .asv
