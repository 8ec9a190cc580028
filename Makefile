# A thin wrapper over Meson for the README's commands.
PREFIX ?= /usr/local
BUILD ?= build
CHECK_BUILD ?= build-check
TSAN_BUILD ?= build-tsan
VENV ?= .venv
MESON ?= meson
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= flatbuf icfile flexbuf icrepo gdelta gloose gpack grefs gcommit toml docs xml parquet parquet_rt
FUZZ_CORPUS = tests/fuzz/corpus
# The toml target also starts from the whole toml-test suite (read only, recursive).
TOML_TEST_SUITE = ../shared/data/toml-test/tests

# The e2e suite's pytest-xdist workers in `make check` (0: one process, no
# workers). Two keep this two-core machine busy: most of a test's time is the
# ASan tether and the servers it talks to, each a process of its own.
E2E_WORKERS ?= 2

STRESS_KILLS ?= 300
STRESS_SEED ?=

.PHONY: all demo check check-asan check-tsan stress unit e2e install bench clean fuzz fuzz-merge

all: $(BUILD)/build.ninja
	$(MESON) compile -C $(BUILD)

$(BUILD)/build.ninja:
	$(MESON) setup $(BUILD) --buildtype=release --prefix=$(PREFIX)

demo: all
	scripts/demo $(BUILD)/tether

# Every test, in a build instrumented with AddressSanitizer and UBSan (gcc),
# then the unit and conformance tests again in a clang build with
# ThreadSanitizer (every warning an error in both). A required tool that is
# missing fails the run (scripts/check-test-tools, and TETHER_REQUIRE_TOOLS=1
# turns a test's "skipped: no jj" into a failure): green means all of it ran.
check:
	scripts/check-test-tools
	$(MAKE) check-asan
	$(MAKE) check-tsan

check-asan: $(CHECK_BUILD)/build.ninja
	$(MESON) compile -C $(CHECK_BUILD)
	TETHER_REQUIRE_TOOLS=1 $(MESON) test -C $(CHECK_BUILD) --print-errorlogs
	PATH="$$HOME/.cargo/bin:$$PATH" TETHER_REQUIRE_TOOLS=1 TETHER_BIN=$(CURDIR)/$(CHECK_BUILD)/tether \
		$(VENV)/bin/python -m pytest -q -n $(E2E_WORKERS) --dist loadgroup tests/e2e

# The e2e suite is not run under ThreadSanitizer: it drives the CLI, whose
# threads the unit and conformance tests already exercise, and TSan's
# slowdown would double `make check`.
check-tsan: $(TSAN_BUILD)/build.ninja
	$(MESON) compile -C $(TSAN_BUILD)
	TETHER_REQUIRE_TOOLS=1 $(MESON) test -C $(TSAN_BUILD) --print-errorlogs --suite unit --suite conformance

$(CHECK_BUILD)/build.ninja:
	CC=$${CC:-gcc} $(MESON) setup $(CHECK_BUILD) --buildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false -Dwerror=true

$(TSAN_BUILD)/build.ninja:
	CC=clang $(MESON) setup $(TSAN_BUILD) --buildtype=debug -Db_sanitize=thread -Db_lundef=false -Dwerror=true

# The random-kill test of test_crash.py, with many more kills than `make check` runs:
# each SIGKILLs `tether commit` at a random instant, re-runs it, and checks that
# nothing temporary is committed and that verify and gc agree.
stress: $(CHECK_BUILD)/build.ninja
	$(MESON) compile -C $(CHECK_BUILD)
	TETHER_STRESS_KILLS=$(STRESS_KILLS) TETHER_STRESS_SEED=$(STRESS_SEED) TETHER_BIN=$(CURDIR)/$(CHECK_BUILD)/tether \
		$(VENV)/bin/python -m pytest -q tests/e2e/test_crash.py -k test_random_kills_during_commit

# libFuzzer (needs clang: Debian clang) on each target for FUZZ_SECONDS, from the committed
# corpus (tests/fuzz/corpus/<target>/, read only) and keeping what it finds
# in $(FUZZ_BUILD)/corpus/<target>/; crashes land in $(FUZZ_BUILD)/crashes/.
# `make fuzz-merge` then adds to the committed corpus only the new inputs that
# reach new coverage (libFuzzer -merge=1), keeping the named seeds as they are.
fuzz: $(FUZZ_BUILD)/build.ninja
	$(MESON) compile -C $(FUZZ_BUILD) $(addprefix tests/fuzz/fuzz_,$(FUZZ_TARGETS))
	mkdir -p $(FUZZ_BUILD)/crashes
	status=0; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
		extra=; if [ $$t = toml ]; then extra=$(TOML_TEST_SUITE); fi; \
		$(FUZZ_BUILD)/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-rss_limit_mb=2048 -timeout=10 -artifact_prefix=$(FUZZ_BUILD)/crashes/$$t- \
			$(FUZZ_BUILD)/corpus/$$t $(FUZZ_CORPUS)/$$t $$extra || status=1; \
	done; exit $$status

fuzz-merge: $(FUZZ_BUILD)/build.ninja
	$(MESON) compile -C $(FUZZ_BUILD) $(addprefix tests/fuzz/fuzz_,$(FUZZ_TARGETS))
	set -e; for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
		$(FUZZ_BUILD)/tests/fuzz/fuzz_$$t -merge=1 $(FUZZ_CORPUS)/$$t $(FUZZ_BUILD)/corpus/$$t; \
	done

$(FUZZ_BUILD)/build.ninja:
	CC=clang $(MESON) setup $(FUZZ_BUILD) --buildtype=debugoptimized -Db_sanitize=address,undefined \
		-Db_lundef=false -Dfuzz=true

install: $(BUILD)/build.ninja
	$(MESON) configure $(BUILD) --prefix=$(PREFIX)
	$(MESON) compile -C $(BUILD)
	DESTDIR=$(DESTDIR) $(MESON) install -C $(BUILD) --no-rebuild

bench: all
	bench/run $(BUILD)

clean:
	rm -rf $(BUILD) $(CHECK_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
