# The two commands: `make demo` runs the queue locally, `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The SDK tests run under both SageMaker SDKs: .venv has the current one (v3), this one v2.
SDK2_VENV := .venv-sdk2
SDK2_BIN := $(SDK2_VENV)/bin

.PHONY: install demo test lint bench clean build-QueueFunction

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(SDK2_BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(SDK2_VENV)
	$(SDK2_BIN)/python -m pip install --quiet --upgrade pip
	$(SDK2_BIN)/python -m pip install --quiet -e '.[local,sagemaker,test]' 'sagemaker<3'
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/python -m tjq.demo

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/cfn-lint template.yaml

# Every test with SDK v3, then the SDK tests (tests/sdk) again with SDK v2.
test: lint $(SDK2_BIN)/.installed
	TJQ_SDK=3 $(BIN)/python -m pytest
	TJQ_SDK=2 $(SDK2_BIN)/python -m pytest tests/sdk

# Schedule quality, cost per scheduling pass and speed; writes bench/results/.
bench: install
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) $(SDK2_VENV) .aws-sam .pytest_cache .ruff_cache *.egg-info

# Called by `sam build` (Metadata: BuildMethod: makefile): the Lambda package and its
# one runtime dependency; boto3 comes with the Lambda runtime.
build-QueueFunction:
	mkdir -p "$(ARTIFACTS_DIR)"
	cp -R job_queue "$(ARTIFACTS_DIR)/"
	find "$(ARTIFACTS_DIR)" -name __pycache__ -prune -exec rm -rf {} +
	$(PYTHON) -m pip install --quiet -r job_queue/requirements.txt -t "$(ARTIFACTS_DIR)"
