# A thin wrapper over Meson for the README's commands.
PREFIX ?= /usr/local
BUILD ?= build
CHECK_BUILD ?= build-check
VENV ?= .venv
MESON ?= meson

.PHONY: all demo check unit e2e install bench clean

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

$(CHECK_BUILD)/build.ninja:
	CC=$${CC:-gcc} $(MESON) setup $(CHECK_BUILD) --buildtype=debug -Db_sanitize=address,undefined \
		-Db_lundef=false -Dwerror=true

install: $(BUILD)/build.ninja
	$(MESON) configure $(BUILD) --prefix=$(PREFIX)
	$(MESON) compile -C $(BUILD)
	DESTDIR=$(DESTDIR) $(MESON) install -C $(BUILD) --no-rebuild

bench: all
	bench/run $(BUILD)

clean:
	rm -rf $(BUILD) $(CHECK_BUILD)
