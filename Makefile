# The two commands: `make demo` runs the queue locally, `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The SDK tests run under both SageMaker SDKs: .venv has the current one (v3), this one v2.
SDK2_VENV := .venv-sdk2
SDK2_BIN := $(SDK2_VENV)/bin
# The IaC scanner, in a virtualenv of its own: checkov pins its own versions of boto3 and
# others, which need not agree with the SageMaker SDK's.
SCAN_VENV := .venv-checkov
SCAN_BIN := $(SCAN_VENV)/bin
CHECKOV := checkov>=3.2,<4

.PHONY: install venvs chromium demo test lint bench faults clean build-QueueFunction

# Installs skip byte-compiling: the SDKs are large, and what runs compiles on first use.
PIP_INSTALL = python -m pip install --quiet --no-compile

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/$(PIP_INSTALL) --upgrade pip
	$(BIN)/$(PIP_INSTALL) -e '.[dev]'
	touch $@

$(SDK2_BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(SDK2_VENV)
	$(SDK2_BIN)/$(PIP_INSTALL) --upgrade pip
	$(SDK2_BIN)/$(PIP_INSTALL) -e '.[local,sagemaker,test]' 'sagemaker<3'
	touch $@

$(SCAN_BIN)/.installed: Makefile
	$(PYTHON) -m venv $(SCAN_VENV)
	$(SCAN_BIN)/$(PIP_INSTALL) --upgrade pip
	$(SCAN_BIN)/$(PIP_INSTALL) '$(CHECKOV)'
	touch $@

install: $(BIN)/.installed

# The virtualenvs, built side by side (on 2 cores, the installs take half the time), and
# beside them the browser that `smq ui`'s tests drive.
venvs:
	$(MAKE) --no-print-directory -j3 $(BIN)/.installed $(SDK2_BIN)/.installed \
		$(SCAN_BIN)/.installed chromium

# Debian's Chromium for tests/browser, installed where this machine lets us (root and
# apt-get); elsewhere install it yourself, or those tests are skipped, saying so.
chromium:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
		&& { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			chromium; } >/dev/null 2>&1; } \
		|| echo "make: no chromium here: tests/browser will be skipped (apt-get install chromium)"

demo: install
	$(BIN)/python -m tjq.demo

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/cfn-lint template.yaml

# Every test with SDK v3 (on every core) and, beside it, the SDK tests (tests/sdk) with SDK
# v2: those mostly wait on emulated jobs, so the runs share the machine well. Both must pass.
test: venvs lint
	@TJQ_SDK=2 $(SDK2_BIN)/python -m pytest tests/sdk -p no:cacheprovider \
		> $(SDK2_VENV)/test.log 2>&1 & sdk2=$$!; \
	TJQ_SDK=3 $(BIN)/python -m pytest -n auto; sdk3_status=$$?; \
	wait $$sdk2; sdk2_status=$$?; \
	echo "--- tests/sdk with SageMaker SDK v2:"; cat $(SDK2_VENV)/test.log; \
	exit $$((sdk3_status || sdk2_status))

# Schedule quality, cost per scheduling pass and speed; writes bench/results/.
bench: install
	$(BIN)/python bench/run.py

# The fault suite at length: every call of every scenario killed in turn, and SEEDS seeded
# schedules of outages (make test runs each crash point once and a few schedules).
SEEDS ?= 200
faults: install
	$(BIN)/python -m tests.faults --seeds $(SEEDS)

clean:
	rm -rf $(VENV) $(SDK2_VENV) $(SCAN_VENV) .aws-sam .pytest_cache .ruff_cache *.egg-info

# Called by `sam build` (Metadata: BuildMethod: makefile): the Lambda package and its
# one runtime dependency; boto3 comes with the Lambda runtime. The dependency is installed
# for the Lambda's runtime (Python 3.12 on arm64), whatever python3 runs the build, and
# nothing is byte-compiled: the runtime compiles what it imports.
LAMBDA_PLATFORM := --platform manylinux2014_aarch64 --implementation cp --python-version 3.12 \
	--only-binary=:all:
build-QueueFunction:
	mkdir -p "$(ARTIFACTS_DIR)"
	cp -R job_queue "$(ARTIFACTS_DIR)/"
	find "$(ARTIFACTS_DIR)" -name __pycache__ -prune -exec rm -rf {} +
	$(PYTHON) -m pip install --quiet --no-compile $(LAMBDA_PLATFORM) \
		-r job_queue/requirements.txt -t "$(ARTIFACTS_DIR)"
