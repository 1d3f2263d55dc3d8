# Thin wrappers over CMake/CTest. `make serve` = the main job; `make check` = every test.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
PORT       ?= 8080
HOST       ?= 127.0.0.1
VAR        ?= var
ECO        := $(BUILD)/eco

.PHONY: all build asan data web serve check test bench clean

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

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(VAR)
