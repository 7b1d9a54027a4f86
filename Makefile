# Kelvin's thin Makefile: every target says what it does, installs what is
# missing (scripts/deps), and hands the real work to CMake and ctest.
BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
JOBS       ?= $(shell nproc)
# ctest: JOBS tests at a time hold a core each (the "cores" resource, see
# CMakeLists.txt); the 3 tests that mostly wait on the clock run beside them
CTEST_JOBS  = $(shell echo $$(($(JOBS) + 3)))
CORES_SPEC  = printf '{"version":{"major":1,"minor":0},"local":[{"cores":[{"id":"0","slots":%s}]}]}\n' $(JOBS)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=

.PHONY: all build run test bench fuzz format format-check clean

all: build

build:
	@scripts/deps build
	@echo "make: configuring and building kelvin in $(BUILD)/"
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@scripts/run-demo $(BUILD)

test:
	@scripts/deps build test
	@scripts/peers
	@$(MAKE) --no-print-directory format-check
	@echo "make: building the normal tree in $(BUILD)/"
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	@echo "make: building the AddressSanitizer + UBSan tree in $(ASAN_BUILD)/"
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKELVIN_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@echo "make: running every test (normal build; $(JOBS) at a time, plus the 3 that mostly wait)"
	@$(CORES_SPEC) > $(BUILD)/cores.json
	@cd $(BUILD) && ctest --output-on-failure -j $(CTEST_JOBS) --resource-spec-file cores.json
	@echo "make: running every test under ASan + UBSan"
	@$(CORES_SPEC) > $(ASAN_BUILD)/cores.json
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j $(CTEST_JOBS) --resource-spec-file cores.json
	@echo "make: building the ThreadSanitizer tree in $(TSAN_BUILD)/"
	@cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKELVIN_TSAN=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(TSAN_BUILD) -j $(JOBS)
	@echo "make: running the unit tests under ThreadSanitizer (integration is covered by the two trees above)"
	@cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
		ctest --output-on-failure -L unit -j $(JOBS)

bench: build
	@scripts/deps bench
	@scripts/peers
	@echo "make: running the benchmarks (bench/run); results go to stdout"
	@bench/run $(BUILD)

fuzz:
	@scripts/deps build fuzz
	@echo "make: building libFuzzer targets with clang in $(FUZZ_BUILD)/"
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DKELVIN_FUZZ=ON -DKELVIN_SANITIZE=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@for f in $(FUZZ_BUILD)/fuzz/fuzz_*; do n=$${f##*/fuzz_}; \
		echo "make: fuzzing $$n for $(FUZZ_SECONDS)s (corpus fuzz/corpus/$$n)"; \
		mkdir -p fuzz/corpus/$$n; \
		mkdir -p $(FUZZ_BUILD)/corpus/$$n; $$f -max_total_time=$(FUZZ_SECONDS) -max_len=65536 $(FUZZ_BUILD)/corpus/$$n fuzz/corpus/$$n || exit 1; done

format:
	@echo "make: formatting every C file with .clang-format"
	@clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	@echo "make: checking that every C file follows .clang-format (fix with: make format)"
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
