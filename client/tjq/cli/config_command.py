"""`smq config check`: a deployment's parameters checked together before `sam deploy`, by the
checker the function runs at cold start."""

from __future__ import annotations

import json
import os

from tjq.cli.common import fail, read_json

# Flags for the parameters people get wrong together; any other goes in --parameter.
FLAG_PARAMETERS = {
    "capacity": "Capacity",
    "shares": "Shares",
    "capped": "CappedInstanceTypes",
    "training_plan_arns": "TrainingPlanArns",
    "allowed_role_arns": "AllowedRoleArns",
}


def add_parser(commands) -> None:
    """`smq config check`'s flags."""
    config = commands.add_parser(
        "config", help="check a deployment's parameters before `sam deploy`"
    )
    config.add_argument("action", choices=["check"])
    config.add_argument(
        "--template", default="template.yaml", help="the SAM template (default: template.yaml)"
    )
    config.add_argument(
        "--samconfig",
        metavar="FILE",
        help="read parameter_overrides from FILE (default: samconfig.toml, if it is here)",
    )
    config.add_argument("--config-env", default="default", help="samconfig environment")
    config.add_argument("--capacity", metavar="JSON", help="the Capacity parameter")
    config.add_argument(
        "--shares", metavar="FILE", help="a shares file: its JSON is the Shares parameter"
    )
    config.add_argument("--capped", metavar="TYPES", help="CappedInstanceTypes, comma-separated")
    config.add_argument(
        "--training-plan-arns", metavar="ARNS", help="TrainingPlanArns, comma-separated"
    )
    config.add_argument(
        "--allowed-role-arns", metavar="ARNS", help="AllowedRoleArns, comma-separated"
    )
    config.add_argument(
        "--parameter",
        action="append",
        metavar="KEY=VALUE",
        help="any other parameter, as `sam deploy --parameter-overrides` takes it (repeatable)",
    )
    config.set_defaults(run=check)


def check(args) -> int:
    from job_queue.config import ConfigError
    from tjq.settings_check import (
        Template,
        check_parameters,
        parameter_names,
        parameters_from,
        reworded,
        samconfig_parameters,
    )

    try:
        template = Template(args.template)
    except ConfigError as exc:
        return fail(f"{exc}; run it in the project's folder, or give --template")
    here = "samconfig.toml" if os.path.exists("samconfig.toml") else None
    try:
        given: dict[str, str] = {}
        if samconfig := args.samconfig or here:
            given.update(samconfig_parameters(samconfig, args.config_env))
        given.update(parameters_from(args.parameter or [], "--parameter"))
        for option, parameter in FLAG_PARAMETERS.items():
            value = getattr(args, option)
            if value is not None:
                given[parameter] = json.dumps(read_json(value)) if option == "shares" else value
        settings = check_parameters(template, given)
    except ConfigError as exc:
        return fail(reworded(exc, parameter_names(template)))
    print(_summary(settings, given))
    return 0


def _summary(settings, given: dict) -> str:
    capacity = ", ".join(f"{n} x {t}" for t, n in settings.capacity.items() if n)
    parts = [f"capacity {capacity or 'none on demand'}"]
    if settings.shares:
        parts.append(
            f"{len(settings.shares)} shares ({', '.join(s.name for s in settings.shares)})"
        )
    if settings.training_plans:
        parts.append(f"{len(settings.training_plans)} training plans")
    if settings.uncapped:
        parts.append(f"uncapped {', '.join(sorted(settings.uncapped))}")
    parts.append(f"capped types {', '.join(sorted(settings.capped_instance_types)) or 'none'}")
    shown = ", ".join(sorted(given)) or "none: the template's defaults"
    return f"the parameters are consistent: {'; '.join(parts)} (parameters given: {shown})"
