# Makefile - a thin wrapper over meson/ninja for the common jobs.
#
#   make / make build       install missing packages, configure build/, compile
#   make check              all tests (unit, stress, integration) in build/, then unit
#                           and stress again under ASan+UBSan in build-asan/ (the unit
#                           suite replays every fuzz corpus of tests/fuzz/)
#   make stress SEED=N COUNT=K   run the stress test with a chosen seed and count
#                           (STRESS_FLAGS=--arrays: arrays as the backings)
#   make demo               build, then scripts/demo.sh
#   make bench              build, then the hit-path, served-path, pool-scenario, drain and busy
#                           benchmarks
#   make soak MINUTES=N     build, then tests/soak/soak.sh: the real server, fio verify on
#                           every volume, failures and kills for N minutes (default 10)
#   make fuzz SECONDS=N     build the libFuzzer targets (clang, build-fuzz/) and run each
#                           for N seconds (default 60); new inputs go to
#                           build-fuzz/corpus-new/, crashes to build-fuzz/crashes/
#   make clean              remove the build directories
#
# Meson itself does the real work; you can always use `meson setup build && ninja -C
# build && meson test -C build` directly.

BUILD ?= build
BUILD_ASAN ?= $(BUILD)-asan
BUILD_TSAN ?= $(BUILD)-tsan
MESON ?= meson
NINJA ?= ninja
SEED ?= 1
COUNT ?= 100
SECONDS ?= 60
MINUTES ?= 10
BUILD_FUZZ ?= build-fuzz

# Options for the sanitizer build, and a runtime setup in which any report fails.
ASAN_SETUP = -Db_sanitize=address,undefined -Db_lundef=false
SAN_ENV = ASAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1:detect_leaks=1 \
	UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
	TC_STRESS_COUNT=100

MESON_TEST = $(MESON) test --print-errorlogs --num-processes 2

# $(call configure,DIR,SETUP-OPTIONS): set up DIR when it has no build.ninja yet (ninja
# reconfigures by itself when a meson.build changes).  A directory left without
# build.ninja by an interrupted setup is set up again (with --wipe when meson had
# already stored its settings there).
configure = set -e; \
	if [ ! -f $(1)/build.ninja ]; then \
		if [ -f $(1)/meson-private/coredata.dat ]; then wipe=--wipe; else wipe=; fi; \
		$(MESON) setup $$wipe $(2) $(1) .; \
	fi

# Summary of the last `meson test` runs as one plain line ("check: N passed, N failed,
# N skipped"), read from meson's JSON logs.  Expected failures count as passed.
SUMMARY = cat $(BUILD)/meson-logs/testlog.json $(BUILD_ASAN)/meson-logs/testlog.json \
		$(BUILD_TSAN)/meson-logs/testlog.json \
		2>/dev/null | grep -o '"result": *"[A-Z]*"' | \
	awk -F'"' '{ if ($$4 == "OK" || $$4 == "EXPECTEDFAIL") p++; \
		else if ($$4 == "SKIP") s++; else f++ } \
		END { printf "check: %d passed, %d failed, %d skipped\n", p, f, s }'

.PHONY: all build deps configure check check-normal check-asan build-asan \
	check-tsan build-tsan \
	stress demo bench fuzz soak clean

all: build

# Packages: scripts/install-deps.sh is quick when all are there, but it runs again
# only when it is newer than its stamp (make clean removes the stamp).
deps: $(BUILD)/.tc-deps-stamp

$(BUILD)/.tc-deps-stamp: scripts/install-deps.sh
	sh scripts/install-deps.sh
	mkdir -p $(BUILD)
	touch $@

configure: deps
	@$(call configure,$(BUILD),)

build: configure
	$(NINJA) -C $(BUILD)

build-asan: deps
	@$(call configure,$(BUILD_ASAN),$(ASAN_SETUP))
	$(NINJA) -C $(BUILD_ASAN)

# Both passes run even when the first fails, so one CI run shows every failure; the
# target fails if either pass (or the ASan build) failed.
check: build
	@rc=0; \
	rm -f $(BUILD)/meson-logs/testlog.json $(BUILD_ASAN)/meson-logs/testlog.json \
		$(BUILD_TSAN)/meson-logs/testlog.json; \
	echo "== tests: $(BUILD) (all suites)"; \
	$(MAKE) --no-print-directory check-normal || rc=1; \
	echo "== tests: $(BUILD_ASAN) (ASan+UBSan; unit and stress, TC_STRESS_COUNT=100)"; \
	$(MAKE) --no-print-directory check-asan || rc=1; \
	echo "== tests: $(BUILD_TSAN) (ThreadSanitizer; the multi-threaded tests)"; \
	$(MAKE) --no-print-directory check-tsan || rc=1; \
	$(SUMMARY); \
	if [ $$rc -ne 0 ]; then echo "make check: FAILED" >&2; fi; \
	exit $$rc

check-normal: build
	$(MESON_TEST) -C $(BUILD)

check-asan: build-asan
	env $(SAN_ENV) $(MESON_TEST) -C $(BUILD_ASAN) --no-suite integration \
		--timeout-multiplier 3

build-tsan: deps
	@$(call configure,$(BUILD_TSAN),-Db_sanitize=thread -Db_lundef=false)
	$(NINJA) -C $(BUILD_TSAN)

check-tsan: build-tsan
	env TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(MESON_TEST) \
		-C $(BUILD_TSAN) --suite threaded --timeout-multiplier 3

stress: build
	$(BUILD)/tests/stress/tc-stress --seed $(SEED) --count $(COUNT) $(STRESS_FLAGS)

# SOAK: docs/testing.md.  SOAK_SEED=N repeats a run's random choices.
soak: build
	TIERCACHE=$(BUILD)/src/cli/tiercache \
	TC_NBDKIT_PLUGIN=$(BUILD)/src/nbd/nbdkit-tiercache-plugin.so \
	TC_SOURCE_ROOT=$(CURDIR) sh tests/soak/soak.sh $(MINUTES)

# DEMO: the main job on a built-in default: emulated HDD and SSD in a temporary folder,
# uncached vs write-through vs write-back through NBD with fio (`tiercache bench
# --quick`), then a CloudPhysics replay; about 2 minutes, sparse files removed at the end.
demo: build
	BUILD=$(BUILD) sh scripts/demo.sh

bench: build
	$(BUILD)/bench/tc-bench-hit
	$(BUILD)/bench/served/tc-bench-served
	$(BUILD)/bench/tc-bench-scenario --secs 0.2 --hot 32 --span 96
	$(BUILD)/bench/tc-bench-drain
	$(BUILD)/bench/tc-bench-busy --secs 5

# FUZZ: scripts/fuzz.sh (how to promote new corpus entries is in its header).
fuzz: deps
	BUILD_FUZZ=$(BUILD_FUZZ) sh scripts/fuzz.sh $(SECONDS)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN) $(BUILD_FUZZ)
