# The one interface to the project: every command a person or CI runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export VIRTUAL_ENV := $(abspath $(VENV))
INTEROP := tests/interop
CKEXAMPLE := examples/copilotkit
PLAYGROUND := clients/playground

.PHONY: dev build build-release test test-rust test-py test-pure test-wheel dist bench-abi3 postgresql chromium redis copilotkit-example playground lint bench bench-server demo clean

dev: $(VENV)/.deps build $(INTEROP)/node_modules/.installed $(PLAYGROUND)/node_modules/.installed

$(VENV)/.deps: requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	touch $@

# A release build: the tests and benches measure what users install.
build: $(VENV)/.deps
	rm -f python/agui_bridge/_native*.so
	$(BIN)/maturin develop --release -q

$(INTEROP)/node_modules/.installed: $(wildcard $(INTEROP)/package*.json)
	if [ -f $(INTEROP)/package.json ]; then cd $(INTEROP) && SCARF_ANALYTICS=false npm ci --no-audit --no-fund; fi
	mkdir -p $(INTEROP)/node_modules && touch $@

test: dev postgresql chromium redis copilotkit-example test-rust test-py test-pure test-wheel

# The CopilotKit example app's pinned packages, from its lockfile (its browser
# test builds and serves it); reinstalled when the lockfile changes.
copilotkit-example: $(CKEXAMPLE)/node_modules/.installed

$(CKEXAMPLE)/node_modules/.installed: $(CKEXAMPLE)/package.json $(CKEXAMPLE)/package-lock.json
	cd $(CKEXAMPLE) && SCARF_ANALYTICS=false npm ci --no-audit --no-fund
	touch $@

# The playground's script: @ag-ui/client bundled by esbuild (pinned) into the
# package. The built file is committed (a wheel or sdist build needs no npm);
# tests/test_playground_routes.py checks it is what this makes.
$(PLAYGROUND)/node_modules/.installed: $(PLAYGROUND)/package.json $(PLAYGROUND)/package-lock.json
	cd $(PLAYGROUND) && SCARF_ANALYTICS=false npm ci --no-audit --no-fund
	touch $@

playground: $(PLAYGROUND)/node_modules/.installed
	cd $(PLAYGROUND) && node build.mjs

# The tests start their own PostgreSQL (the thread store's); its server package
# is installed once, as root (CI): a no-op when it is there.
postgresql:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql; \
	else echo "postgresql: not installed and not root; its tests skip (CI fails them)" >&2; fi

# The browser tests drive Debian's Chromium, headless, with Playwright for
# Python (requirements-dev.txt); no browser is ever downloaded. Installed once,
# as root (CI): a no-op when it is there.
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	else echo "chromium: not installed and not root; the browser tests skip (CI fails them)" >&2; fi

# The tests start their own redis-server (shared run logs) the same way.
redis:
	@if command -v redis-server >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server; \
	else echo "redis: redis-server not installed and not root; its tests skip (CI fails them)" >&2; fi

test-rust:
	cargo test --workspace -q

test-py:
	$(BIN)/python -m pytest -q

# The pure build alone, as a user without the extension gets it (the browser
# tests once, in test-py: a page does not see which build served it).
test-pure:
	AGUI_BRIDGE_PURE=1 $(BIN)/python -m pytest -q -m "not native_only and not browser"

# What users install: manylinux_2_17 wheels linked by zig (the ziglang package,
# found on PATH), the abi3 one for CPython 3.11+ and the faster cp311 one that pip
# prefers on 3.11 (benches/RESULTS.md), and the sdist.
WHEEL_BUILD := PATH="$(abspath $(BIN)):$$PATH" $(BIN)/maturin build --release --zig \
	--compatibility manylinux_2_17 -i $(BIN)/python

dist: $(VENV)/.deps
	rm -rf dist
	$(WHEEL_BUILD) --features abi3 -o dist
	$(WHEEL_BUILD) -o dist
	$(BIN)/maturin sdist -o dist

# Each wheel in a fresh venv, without Rust on PATH or the checkout on sys.path.
test-wheel: dist
	$(BIN)/python tests/wheel_smoke.py dist

lint: $(VENV)/.deps
	$(BIN)/ruff check python tests benches examples tools
	$(BIN)/ruff format --check python tests benches examples tools
	$(BIN)/python tools/field_table.py --check
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

bench: dev
	$(BIN)/python benches/transformer.py
	$(BIN)/python benches/ingress.py
	$(BIN)/python benches/threads.py
	$(BIN)/python benches/adapters.py

# abi3 against the cp311 build, side by side: the wheels of `make dist`.
bench-abi3: dist
	$(BIN)/python benches/abi3.py --abi3 dist/*-abi3-*.whl --specific dist/*-cp311-cp311-*.whl

bench-server: dev
	$(BIN)/python benches/server.py

demo: dev
	$(BIN)/agui-bridge demo

clean:
	rm -rf $(VENV) target dist python/agui_bridge/_native*.so $(INTEROP)/node_modules $(CKEXAMPLE)/node_modules $(CKEXAMPLE)/dist $(PLAYGROUND)/node_modules
