# Thin wrappers over CMake/CTest. `make serve` = the main job; `make check` = every test.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
PORT       ?= 8080
HOST       ?= 127.0.0.1
VAR        ?= var
ECO        := $(BUILD)/eco

.PHONY: all build asan data serve check test bench wasm clean

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
	$(ECO) fit --db $(VAR)/eco.db --out $(VAR)/curves.json

serve: data
	$(ECO) serve --db $(VAR)/eco.db --curves $(VAR)/curves.json --web web --host $(HOST) --port $(PORT)

# Every test: unit (cmocka), integration (CLI + HTTP over real sockets), node (MCP SDK client, browser),
# fuzz-corpus replays, all under ASan/UBSan; plus the release build (CUDA code compiles where nvcc exists).
check: build asan
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

test: check

bench: build
	@for b in $(BUILD)/bench_*; do [ -x "$$b" ] && "$$b"; done; true

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(VAR)
