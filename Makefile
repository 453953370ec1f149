# The two commands of the README, and the rest of the daily loop.
#
#   make demo      install missing Debian packages, build, run each system's headline study and the report
#   make test      install, build, run the test suite (all but tests labelled slow)
#   make build     install and build only
#   make bench     build and run the benchmarks (experiments/bench)
#   make igsp      build and run the IGSP calibration study (about 10 min)
#   make sis       build and run SIS's estimator and stability studies
#   make test-all  the test suite including slow tests
#   make fuzz      build the libFuzzer targets with clang and run each for 60 s
#   make format    clang-format every C++ file of ours
#   make clean     remove the build folders

BUILD     ?= build
FUZZ_BUILD ?= build-fuzz
JOBS      ?= $(shell nproc)
CLI       := $(BUILD)/cli/clustertwin
OUT       ?= out
FUZZ_SECONDS ?= 60

.PHONY: all deps configure build test test-all bench demo igsp sis fuzz format clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@mkdir -p $(BUILD) && cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release > $(BUILD)/configure.log 2>&1 || \
	  { cat $(BUILD)/configure.log; exit 1; }

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD) -LE slow -j $(JOBS) --output-on-failure

test-all: build
	ctest --test-dir $(BUILD) -j $(JOBS) --output-on-failure

bench: build
	@for b in $(BUILD)/experiments/bench/*_bench; do echo "== $$b"; "$$b" || exit 1; done

# The demo: each system's headline study (IGSP and SIS in their quick
# versions), about 4 minutes on 2 cores, then one page with every reproduced
# figure beside the paper's: $(OUT)/report/index.html (scripts/demo.sh).
demo: build
	@bash scripts/demo.sh $(BUILD) $(OUT) $(JOBS)

# The IGSP calibration study from the shipped checkpoint: the retention table,
# the rho table with exact p-values, the comparisons and plots in $(OUT)/igsp.
igsp: build
	@mkdir -p $(OUT)
	$(BUILD)/experiments/ct_igsp_study --out $(OUT)/igsp --jobs $(JOBS)

# SIS's exact-gradient estimator study and GRPO stability study, full grids,
# with tables, CSV, JSON and plots in $(OUT)/sis.
sis: build
	@mkdir -p $(OUT)
	$(CLI) sis study --out $(OUT)/sis
	$(CLI) sis stability --out $(OUT)/sis

fuzz: deps
	@mkdir -p $(FUZZ_BUILD) && CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCT_FUZZ=ON > $(FUZZ_BUILD)/configure.log 2>&1 || \
	  { cat $(FUZZ_BUILD)/configure.log; exit 1; }
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	bash scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)
