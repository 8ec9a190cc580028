# A thin wrapper over Meson for the README's commands.
PREFIX ?= /usr/local
BUILD ?= build
CHECK_BUILD ?= build-check
VENV ?= .venv
MESON ?= meson
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= flatbuf icfile flexbuf icrepo gdelta gloose gpack grefs
FUZZ_CORPUS = tests/fuzz/corpus

STRESS_KILLS ?= 300
STRESS_SEED ?=

.PHONY: all demo check stress unit e2e install bench clean fuzz fuzz-merge

all: $(BUILD)/build.ninja
	$(MESON) compile -C $(BUILD)

$(BUILD)/build.ninja:
	$(MESON) setup $(BUILD) --buildtype=release --prefix=$(PREFIX)

demo: all
	scripts/demo $(BUILD)/tether

# Every test, in a build instrumented with AddressSanitizer and UBSan.
check: $(CHECK_BUILD)/build.ninja
	$(MESON) compile -C $(CHECK_BUILD)
	$(MESON) test -C $(CHECK_BUILD) --print-errorlogs
	PATH="$$HOME/.cargo/bin:$$PATH" TETHER_BIN=$(CURDIR)/$(CHECK_BUILD)/tether $(VENV)/bin/python -m pytest -q tests/e2e

# The random-kill test of test_crash.py, with many more kills than `make check` runs:
# each SIGKILLs `tether commit` at a random instant, re-runs it, and checks that
# nothing temporary is committed and that verify and gc agree.
stress: $(CHECK_BUILD)/build.ninja
	$(MESON) compile -C $(CHECK_BUILD)
	TETHER_STRESS_KILLS=$(STRESS_KILLS) TETHER_STRESS_SEED=$(STRESS_SEED) TETHER_BIN=$(CURDIR)/$(CHECK_BUILD)/tether \
		$(VENV)/bin/python -m pytest -q tests/e2e/test_crash.py -k test_random_kills_during_commit

$(CHECK_BUILD)/build.ninja:
	CC=$${CC:-gcc} $(MESON) setup $(CHECK_BUILD) --buildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false -Dwerror=true

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
		$(FUZZ_BUILD)/tests/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-rss_limit_mb=2048 -timeout=10 -artifact_prefix=$(FUZZ_BUILD)/crashes/$$t- \
			$(FUZZ_BUILD)/corpus/$$t $(FUZZ_CORPUS)/$$t || status=1; \
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
	rm -rf $(BUILD) $(CHECK_BUILD) $(FUZZ_BUILD)
