# Thin wrappers over CMake/CTest. `make serve` = the main job; `make check` = every test.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
PORT       ?= 8080
HOST       ?= 127.0.0.1
VAR        ?= var
ECO        := $(BUILD)/eco

.PHONY: all build asan data web serve check test bench fuzz clean

all: build

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DECO_SANITIZE=ON -DECO_CUDA=OFF >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# The embedded dataset: import data/ into the store, then fit curves from it.
data: build
	mkdir -p $(VAR)
	$(ECO) import --db $(VAR)/eco.db data/reference
	for f in data/h200/*.energy.json data/h100/*.energy.json; do $(ECO) import --db $(VAR)/eco.db --run $$f; done
	$(ECO) fit --db $(VAR)/eco.db --out $(VAR)/curves.json
	scripts/build-web.sh --build $(BUILD) --curves $(VAR)/curves.json --db $(VAR)/eco.db

web: data

serve: data
	$(ECO) serve --db $(VAR)/eco.db --curves $(VAR)/curves.json --web web --host $(HOST) --port $(PORT)

# Every test: unit (cmocka), integration (CLI + HTTP over real sockets), node (MCP SDK client, browser),
# fuzz-corpus replays, all under ASan/UBSan; plus the release build (CUDA code compiles where nvcc exists).
check: build asan
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

test: check

# Benchmarks print figures and ratios. The API benchmark serves the embedded dataset under wrk; the engine
# benchmark needs a CUDA device (it says so and stops on a machine without one).
bench: data
	$(BUILD)/bench/bench_fit
	$(BUILD)/bench/bench_quant
	bench/api.sh
	-$(BUILD)/bench/bench_engine

# A libFuzzer campaign (clang) over every parser's target, FUZZ_SECONDS each, from a copy of its corpus in
# $(FUZZ_BUILD)/corpus (the checked-in corpus is only read), with tests/fuzz/<target>.dict where there is one.
# CI replays the corpora instead (`make check`). Findings land in $(FUZZ_BUILD)/findings/<target>/: add the input
# to tests/fuzz/corpus/<target>/ with the fix.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := $(notdir $(basename $(wildcard tests/fuzz/fuzz_*.c)))
fuzz:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DECO_FUZZ=ON -DECO_SANITIZE=ON -DECO_CUDA=OFF >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)
	set -e; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/findings/$$t; \
	  cp -n tests/fuzz/corpus/$$t/* $(FUZZ_BUILD)/corpus/$$t/ 2>/dev/null || true; \
	  echo "== $$t ($(FUZZ_SECONDS) s)"; \
	  dict=; test -f tests/fuzz/$$t.dict && dict=-dict=tests/fuzz/$$t.dict; \
	  log=$(FUZZ_BUILD)/findings/$$t.log; \
	  ECO_SOURCE_DIR=$(CURDIR) $(FUZZ_BUILD)/tests/$$t $$dict -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -max_len=65536 \
	    -artifact_prefix=$(FUZZ_BUILD)/findings/$$t/ $(FUZZ_BUILD)/corpus/$$t >$$log 2>&1 || true; \
	  grep -E "^Done [0-9]+ runs|ERROR|SUMMARY|^$$t: " $$log || true; \
	  test -z "$$(ls $(FUZZ_BUILD)/findings/$$t)" || { echo "$$t: findings in $(FUZZ_BUILD)/findings/$$t (log: $$log)"; exit 1; }; \
	  grep -qE "^Done [0-9]+ runs" $$log || { echo "$$t: the campaign did not run to its end: $$log"; tail -5 $$log; exit 1; }; \
	done

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(VAR)
