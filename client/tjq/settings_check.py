"""The queue's settings checked before they are used, by the checker the Lambda runs at cold
start (:meth:`job_queue.config.Settings.from_environment`): `smq config check` checks a
deployment's parameters before `sam deploy`, and `smq local-api` its flags before it starts.

The template's ``Variables`` section says which function variable each parameter becomes, so
the parameters are read the way CloudFormation passes them (lists joined with commas,
defaults where a parameter is not given).
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Mapping
from pathlib import Path

from job_queue.config import ConfigError, Settings

FUNCTION = "QueueFunction"


class Template:
    """What `sam deploy` makes of ``template.yaml``'s parameters: each one's default, and the
    function variable it becomes."""

    def __init__(self, path: str | Path) -> None:
        import yaml

        class Loader(yaml.SafeLoader):
            pass

        # CloudFormation's short forms (!Ref X, !Join [",", !Ref Y]) as plain values.
        def intrinsic(loader, suffix, node):
            if isinstance(node, yaml.ScalarNode):
                value = loader.construct_scalar(node)
            else:
                value = loader.construct_sequence(node, deep=True)
            return {suffix: value}

        Loader.add_multi_constructor("!", intrinsic)
        try:
            document = yaml.load(Path(path).read_text(), Loader=Loader)
        except OSError as exc:
            raise ConfigError(f"cannot read the template {path}: {exc.strerror}") from None
        self.parameters: dict[str, dict] = document.get("Parameters") or {}
        function = document["Resources"][FUNCTION]["Properties"]
        variables = function["Environment"]["Variables"]
        # variable -> (parameter, is a list); a variable made of no parameter is left out.
        self.variables: dict[str, tuple[str, bool]] = {}
        for variable, value in variables.items():
            if isinstance(value, dict) and "Ref" in value and value["Ref"] in self.parameters:
                self.variables[variable] = (value["Ref"], False)
            elif isinstance(value, dict) and "Join" in value:
                ref = value["Join"][1]
                if isinstance(ref, dict) and ref.get("Ref") in self.parameters:
                    self.variables[variable] = (ref["Ref"], True)

    def environment(self, given: Mapping[str, str]) -> dict[str, str]:
        """The function's variables for the parameters ``given`` (others at their default);
        ConfigError naming a parameter the template does not have."""
        unknown = sorted(set(given) - set(self.parameters))
        if unknown:
            raise ConfigError(
                f"{', '.join(unknown)}: not a parameter of the template "
                f"(its parameters: {', '.join(self.parameters)})"
            )
        env = {"TABLE_NAME": "training-job-queue", "QUEUE_NAME": "training-job-queue"}
        for variable, (parameter, is_list) in self.variables.items():
            value = given.get(parameter, str(self.parameters[parameter].get("Default", "")))
            if is_list:
                value = ",".join(part.strip() for part in value.split(","))
            env[variable] = value
        return env


def check_parameters(template: Template, given: Mapping[str, str]) -> Settings:
    """The settings a deployment with these parameters would run with; ConfigError naming
    the setting that the function would refuse at cold start."""
    return Settings.from_environment(template.environment(given))


def samconfig_parameters(path: str | Path, environment: str = "default") -> dict[str, str]:
    """The ``parameter_overrides`` of a samconfig.toml (``{}`` if it sets none)."""
    try:
        config = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not TOML: {exc}") from None
    deploy = config.get(environment, {}).get("deploy", {}).get("parameters", {})
    overrides = deploy.get("parameter_overrides", [])
    items = shlex.split(overrides) if isinstance(overrides, str) else list(overrides)
    return parameters_from(items, f"{path}: parameter_overrides")


def parameters_from(items: list[str], where: str) -> dict[str, str]:
    """``Key=Value`` items (as `sam deploy --parameter-overrides` takes them) as a dict."""
    parameters = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z0-9]+", key):
            raise ConfigError(f"{where}: {item!r} is not Key=Value")
        parameters[key] = value
    return parameters


def reworded(error: ConfigError, names: Mapping[str, str]) -> str:
    """``error``'s message in the words of whoever set the values: each function variable it
    names as the parameter or flag that sets it (``names``: variable -> name)."""
    message = str(error)
    for variable, name in names.items():
        message = re.sub(rf"\b{variable}\b", name, message)
    return re.sub(r"(\S+) \(\1\)", r"\1", message)  # "TrainingPlanArns (TrainingPlanArns)"


def parameter_names(template: Template) -> dict[str, str]:
    """variable -> the template parameter that sets it."""
    return {variable: parameter for variable, (parameter, _) in template.variables.items()}
