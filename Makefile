# The one interface to the project: every command a person or CI runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export VIRTUAL_ENV := $(abspath $(VENV))
INTEROP := tests/interop
CKEXAMPLE := examples/copilotkit
AUIEXAMPLE := examples/assistant-ui
PLAYGROUND := clients/playground

# pytest's tiers (tests/tiers.py): unit (in process), server, external (PostgreSQL,
# Redis), interop (Node), browser (Chromium). Two workers on this 2-core machine:
# most of the suite waits on servers and clients, not on the CPU (benches/RESULTS.md).
#
# Every pytest process (each xdist worker) rewrites the asserts of every test
# module, and every server a test starts compiles the package: both are cached
# in __pycache__ (gitignored; never in a wheel) only when Python may write
# bytecode. Environments that set PYTHONDONTWRITEBYTECODE (this team's shells
# do) made each worker spend about 15 s of CPU collecting instead of 5.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q
XDIST := -n 2 --dist loadfile

.PHONY: dev build build-dev check test test-rust test-py test-pure test-wheel wheel-smoke native-from-dist dist bench-abi3 postgresql chromium redis copilotkit-example assistant-ui-example node-deps playground lint stubtest bench bench-profile bench-instructions valgrind bench-server demo clean

dev: $(VENV)/.deps build node-deps

node-deps: $(INTEROP)/node_modules/.installed $(PLAYGROUND)/node_modules/.installed

$(VENV)/.deps: requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	touch $@

# A release build (fat LTO, the shipping profile): the benches and the demo measure
# what users install.
build: $(VENV)/.deps
	rm -f python/agui_bridge/_native*.so
	$(BIN)/maturin develop --release -q

# A debug build (no LTO, incremental): the inner loop's.
build-dev: $(VENV)/.deps
	rm -f python/agui_bridge/_native*.so
	$(BIN)/maturin develop -q

# The inner loop: the dev build, then the unit tier (the transformer on both
# builds, vectors, parity and differential, the turn functions, the ingress in
# process). Server, Node, browser, PostgreSQL and Redis tests: make test.
check: build-dev
	$(PYTEST) $(XDIST) -m unit

$(INTEROP)/node_modules/.installed: $(wildcard $(INTEROP)/package*.json)
	if [ -f $(INTEROP)/package.json ]; then cd $(INTEROP) && SCARF_ANALYTICS=false npm ci --no-audit --no-fund; fi
	mkdir -p $(INTEROP)/node_modules && touch $@

# Everything CI proves, on one release build: the wheels of `make dist` are built
# once (fat LTO, the shipping profile), the cp311 one's module is what pytest
# tests (native-from-dist), and both wheels are smoke-tested as installed. The
# wheels build while npm installs the Node packages and cargo builds and runs
# the Rust tests (debug: target/debug has its own lock, so it never waits for
# the release build; fat LTO leaves a core idle). Then the Python tests: every
# test on the native build, then the pure build's unit tier beside the smoke
# of the two wheels (half a minute each, which had the machine to themselves).
test: $(VENV)/.deps postgresql chromium redis
	$(MAKE) --no-print-directory -j4 --output-sync=target native-from-dist test-rust copilotkit-example node-deps assistant-ui-example
	$(MAKE) --no-print-directory test-py
	$(MAKE) --no-print-directory -j2 --output-sync=target test-pure wheel-smoke

# The CopilotKit example app's pinned packages, from its lockfile (its browser
# test builds and serves it); reinstalled when the lockfile changes.
copilotkit-example: $(CKEXAMPLE)/node_modules/.installed

$(CKEXAMPLE)/node_modules/.installed: $(CKEXAMPLE)/package.json $(CKEXAMPLE)/package-lock.json
	cd $(CKEXAMPLE) && SCARF_ANALYTICS=false npm ci --no-audit --no-fund
	touch $@

# The assistant-ui example app's pinned packages, the same way (its browser test,
# issue 20's proof, builds and serves it); installed while the wheels build.
assistant-ui-example: $(AUIEXAMPLE)/node_modules/.installed

$(AUIEXAMPLE)/node_modules/.installed: $(AUIEXAMPLE)/package.json $(AUIEXAMPLE)/package-lock.json
	cd $(AUIEXAMPLE) && SCARF_ANALYTICS=false npm ci --no-audit --no-fund
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

# Under make -j (make test) cargo would find MAKEFLAGS naming a jobserver whose
# pipe make gives only to recursive makes, and warn: it uses its own jobs.
test-rust:
	MAKEFLAGS= cargo test --workspace -q

# Every test on the native build (the transformer tests also on the pure one,
# through the impl fixture).
test-py:
	$(PYTEST) $(XDIST)

# The pure build alone, as a user without the extension gets it: what it changes
# is the transformer and the ingress in process (the unit tier). Servers, Node
# clients and the browser see the same bytes from either build (the vectors and
# the differential tests hold the builds byte-identical), so they run once, in test-py.
test-pure:
	AGUI_BRIDGE_PURE=1 $(PYTEST) $(XDIST) -m "unit and not native_only"

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

# The cp311 wheel's module beside the sources (what `maturin develop` puts
# there): the tests run on the shipping build without a third fat-LTO build.
native-from-dist: dist
	rm -f python/agui_bridge/_native*.so
	$(BIN)/python -c 'import glob, zipfile; \
		(wheel,) = glob.glob("dist/*-cp311-cp311-*.whl"); \
		archive = zipfile.ZipFile(wheel); \
		(so,) = [n for n in archive.namelist() if n.startswith("agui_bridge/_native") and n.endswith(".so")]; \
		archive.extract(so, "python")'

# Each wheel in a fresh venv, without Rust on PATH or the checkout on sys.path.
test-wheel: dist wheel-smoke

# The smoke of the wheels already in dist/ (make test has just built them).
wheel-smoke:
	$(BIN)/python tests/wheel_smoke.py dist

lint: $(VENV)/.deps stubtest
	$(BIN)/ruff check python tests benches examples tools
	$(BIN)/ruff format --check python tests benches examples tools
	$(BIN)/python tools/field_table.py --check
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

# python/agui_bridge/_native.pyi against the built module (whichever build is
# there; the dev build when there is none).
stubtest: $(VENV)/.deps
	ls python/agui_bridge/_native*.so >/dev/null 2>&1 || $(MAKE) build-dev
	cd python && ../$(BIN)/python -m mypy.stubtest --mypy-config-file ../pyproject.toml agui_bridge._native

# The other benches, then benches/summary.py last: one table of issue 23's headline
# figures (transformer, coalescing, server) with their targets, PASS/FAIL;
# BENCH_SERVER=0 leaves the server's out (it takes minutes).
bench: dev
	$(BIN)/python benches/ingress.py
	$(BIN)/python benches/threads.py
	$(BIN)/python benches/adapters.py
	$(BIN)/python benches/summary.py $(if $(filter 0,$(BENCH_SERVER)),--no-server)

# abi3 against the cp311 build, side by side: the wheels of `make dist`.
bench-abi3: dist
	$(BIN)/python benches/abi3.py --abi3 dist/*-abi3-*.whl --specific dist/*-cp311-cp311-*.whl

# Where a granian worker's time goes (py-spy): the breakdown in benches/RESULTS.md.
bench-profile: dev
	$(BIN)/python benches/server_profile.py

# Instructions per item of the native paths (valgrind): exact where time swings.
bench-instructions: dev valgrind
	$(BIN)/python benches/instructions.py --top

valgrind:
	@if command -v valgrind >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y valgrind; \
	else echo "valgrind: not installed and not root" >&2; exit 1; fi

bench-server: dev
	$(BIN)/python benches/server.py

demo: dev
	$(BIN)/agui-bridge demo

clean:
	rm -rf $(VENV) target dist python/agui_bridge/_native*.so $(INTEROP)/node_modules $(CKEXAMPLE)/node_modules $(CKEXAMPLE)/dist $(AUIEXAMPLE)/node_modules $(AUIEXAMPLE)/dist $(PLAYGROUND)/node_modules
