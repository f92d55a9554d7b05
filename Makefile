# One-command set-up: every target builds .venv from the pinned lock file first.
# PYTHON is the interpreter that creates .venv (3.11): make test PYTHON=/path/to/python3.11
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= reports/out

.PHONY: venv test test-fast report report-only mutation bench-smoke lint clean

# torch is the suites' reference (never the library's) and only its CPU build is needed. It is
# installed first: from a wheel pip reaches without any index (a find-links folder or page),
# if there is one; else with TORCH_INDEX as an extra index, by default PyTorch's CPU index on
# Linux (PyPI's Linux wheel is the multi-GB CUDA build). TORCH_INDEX= (empty): pip's own indexes.
TORCH_PIN := $(shell grep -m1 '^torch==' requirements/lock.txt)
ifeq ($(shell uname -s),Linux)
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
endif

$(STAMP): requirements/lock.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip==25.3
	$(BIN)/pip install -q --no-index --no-deps $(TORCH_PIN) 2>/dev/null \
	  || $(BIN)/pip install -q $(TORCH_PIN) $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
	$(BIN)/pip install -q -r requirements/lock.txt
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

## The test command: the whole suite, as CI runs it. The memory suite runs on its own, under
## pytest-memray (--memray: every memory test's allocations, native ones included, reported).
test: $(STAMP)
	$(BIN)/python -m pytest -q --ignore-glob="memory/*"
	$(BIN)/python -m pytest -q memory --memray

## Everything but the slow tier.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" --ignore-glob="memory/*"
	$(BIN)/python -m pytest -q -m "not slow" memory --memray

## The long profile of the program fuzzer: 100,000 random programs run in minitorch and torch;
## counts, failures (with reproducers) and worst errors go to reports/artifacts/fuzz.json.
.PHONY: fuzz
fuzz: $(STAMP)
	$(BIN)/python -m verification.program_fuzz --programs 100000

## The main job: train on the embedded corpus, run the suites, a sampled mutation run, a quick
## benchmark and a short asv run of this commit, build the HTML report.
## Options: make report TINYSHAKESPEARE=path/to/input.txt (add a Tiny Shakespeare run),
## SKIP="asv mutation" (leave steps out; the page then shows older results, if any), FULL=1 (the
## suites' slow tier too; by default the main job runs their fast tier, and the report says so),
## RUNS="runs" (also show these run folders, or folders of runs, each marked with its status;
## by default the Training section shows only the runs the main job trained).
TINYSHAKESPEARE ?= $(MINITORCH_TINYSHAKESPEARE)
report: $(STAMP)
	$(BIN)/python -m reports.main_job --out $(OUT) \
	  $(if $(TINYSHAKESPEARE),--tinyshakespeare $(TINYSHAKESPEARE)) $(if $(SKIP),--skip $(SKIP)) \
	  $(if $(FULL),--full) $(if $(RUNS),--include-runs $(RUNS))

## Rebuild the HTML from the artifacts that already exist (no re-run).
report-only: $(STAMP)
	$(BIN)/python -m reports.build --out $(OUT) $(if $(RUNS),--include-runs $(RUNS))

## Every mutant of every backward rule (the main job runs a sample); merges into mutation.json.
mutation: $(STAMP)
	$(BIN)/python -m verification.mutate_vjps

## asv: every benchmark once, 1 BLAS thread, 2 peer rounds; checks the suite runs, saves nothing.
## The asv machine is named from the CPU (benchmarks/machine.py), never from the hostname.
bench-smoke: $(STAMP)
	m=$$($(BIN)/python -m benchmarks.machine register $(BIN)/asv) && \
	MINITORCH_BENCH_THREADS=1 MINITORCH_BENCH_ROUNDS=2 ASV_PYTHONPATH=$(CURDIR) \
	  $(BIN)/asv run --python=same --quick --show-stderr --machine $$m

.PHONY: bench bench-compare
## Record this commit's asv results with their samples (2 BLAS threads), then the peer table
## (medians, 95 % intervals, verdicts only where measured reliably).
bench: $(STAMP)
	m=$$($(BIN)/python -m benchmarks.machine register $(BIN)/asv) && \
	ASV_PYTHONPATH=$(CURDIR) $(BIN)/asv run --python=same --show-stderr --record-samples \
	  --machine $$m --set-commit-hash=$$(git rev-parse HEAD)
	$(BIN)/python -m benchmarks.compare_peers

## Fail (exit 1) if HEAD's step is significantly (Mann-Whitney) and >= BENCH_THRESHOLD slower
## than BENCH_BASE's; exit 3 when the machine was too busy to tell.
## make bench-compare BENCH_BASE=HEAD~1 [BENCH_THRESHOLD=0.10]
BENCH_BASE ?= HEAD~1
BENCH_THRESHOLD ?= 0.10
bench-compare: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH bash benchmarks/compare.sh $(BENCH_BASE) HEAD $(BENCH_THRESHOLD)

## ruff over every Python file of the repository (CI runs it after the tests: .ci/run).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) $(OUT) reports/artifacts .asv dist

## PyTorch's OpInfo database, every sample of every mapped OpInfo (the test suite runs the first
## two per dtype): counts, failures and exemptions go to reports/artifacts/opinfo.json.
.PHONY: opinfo
opinfo: $(STAMP)
	$(BIN)/python -m verification.opinfo
