"""REST routes of the private API. Each route is one service call and a JSON answer."""

from __future__ import annotations

import json

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response

from job_queue.access import Caller, caller_from
from job_queue.errors import InvalidRequest, QueueError
from job_queue.fair_share_config import set_in_effect
from job_queue.outlook import Outlook
from job_queue.paging import parse_limit
from job_queue.request import parse_body, parse_json
from job_queue.scheduler.holds import HoldAction
from job_queue.scheduler.order import preemption_order
from job_queue.service import QueueService
from job_queue.usage_view import usage_view
from job_queue.views import (
    active_row,
    holds_view,
    iso,
    job_detail,
    outside_row,
    plan_row,
    pool_row,
    shares_view,
    waiting_row,
)

logger = Logger(child=True)


def make_app(service: QueueService) -> APIGatewayRestResolver:
    """The API for one invocation, bound to its service."""
    app = APIGatewayRestResolver()

    @app.exception_handler(QueueError)
    def queue_error(error: QueueError) -> Response:
        if error.status == 403:
            logger.warning(f"refused: {error}")
        return _json(error.status, {"message": str(error), "error": type(error).__name__})

    def caller() -> Caller:
        identity = (app.current_event.raw_event.get("requestContext") or {}).get("identity")
        found = caller_from(identity, service.settings.admin_principals)
        logger.append_keys(caller=found.arn)  # every log line of this request names it
        return found

    @app.post("/add-job")
    def add_job():
        submitted = service.submit(parse_body(app.current_event.body), caller())
        detail = job_detail(submitted.job, submitted.outlook, service.clock())
        body = {
            "job": detail,
            "position": submitted.outlook.position,
        }
        return _json(201 if submitted.created else 200, body)

    @app.get("/jobs")
    def list_jobs():
        query = app.current_event.query_string_parameters or {}
        listing = service.listing(parse_limit(query.get("limit")), query.get("next_token"))
        held, waiting, layout = listing.held, listing.waiting, listing.layout
        now = service.clock()
        # Active jobs first, highest priority first (the reverse of the preemption order),
        # then the waiting queue in the order jobs will start.
        active = sorted(held.jobs, key=preemption_order, reverse=True)
        # Every page has the holders; the waiting jobs are the page's.
        rows = [active_row(j, held.attempt_names[j.name], now) for j in active]
        expected, why = listing.expected, listing.waiting_for
        places = zip(waiting, listing.positions, strict=True)
        rows += [waiting_row(j, p, now, expected.get(j.name), why.get(j.name)) for j, p in places]
        rows += [  # the last page's: jobs out of line until their dependency holds
            waiting_row(j, None, now, expected.get(j.name), why.get(j.name), on)
            for j, on in listing.out_of_line
        ]
        answer = {
            "queue": service.settings.queue_name,
            "jobs": rows,
            "next_token": listing.next_token,
            "waiting": listing.waiting_total,
            "waiting_counted_at": iso(listing.counted_at),
            "pools": [pool_row(p, now) for p in held.idle_pools(now)],
            "outside": [outside_row(j, now) for j in held.outside],
            "plans": [plan_row(p, held.jobs, now) for p in layout.plans],
            "capacity": dict(layout.capacity),
            "uncapped": sorted(layout.uncapped),
            "shares": [share.name for share in layout.shares],
            "fair_share_next": listing.next_up,
            **holds_view(held),
        }
        return _json(200, answer)

    def shares() -> Response:
        layout, usage, waiting, held = service.shares()
        # Who replaced the shares, while what they set is in effect (not since redeployed).
        in_effect = held.shares_deployed == service.settings.shares_text
        changed = (held.shares_changed_by, held.shares_changed_at) if in_effect else (None, None)
        return _json(200, shares_view(layout, usage, waiting, *changed))

    @app.get("/shares")
    def list_shares():
        return shares()

    @app.put("/shares")
    def replace_shares():
        service.set_shares(parse_json(app.current_event.body), caller())
        return shares()

    def usage() -> Response:
        query = app.current_event.query_string_parameters or {}
        viewed, held = service.usage()
        deployed = service.settings.fair_share_weights_text
        changed = set_in_effect(deployed, held.weights_text, held.weights_deployed)
        answer = usage_view(viewed.seen, viewed.accounts, viewed.policy.fair_share)
        answer["changed"] = (
            {"by": held.weights_changed_by, "at": iso(held.weights_changed_at)} if changed else None
        )
        answer["report"] = service.usage_report(query, held)
        answer["budgets"] = [standing.to_dict() for standing in viewed.seen.budgets]
        set_by = service.settings.budgets_text, held.budgets_text, held.budgets_deployed
        answer["budgets_changed"] = (
            {"by": held.budgets_changed_by, "at": iso(held.budgets_changed_at)}
            if set_in_effect(*set_by)
            else None
        )
        return _json(200, answer)

    @app.get("/usage")
    def list_usage():
        return usage()

    @app.get("/timeline")
    def timeline():
        return _json(200, service.timeline(app.current_event.query_string_parameters or {}))

    @app.put("/budgets")
    def replace_budgets():
        service.set_budgets(parse_json(app.current_event.body), caller())
        return usage()

    @app.put("/usage/weights")
    def set_weights():
        service.set_weights(parse_json(app.current_event.body), caller())
        return usage()

    def change_hold(action: HoldAction) -> Response:
        body = parse_json(app.current_event.body) if app.current_event.body else {}
        if not isinstance(body, dict) or set(body) - {"share"}:
            raise InvalidRequest('the body must be empty, or name a share: {"share": "A"}')
        held = service.change_hold(action, body.get("share"), caller())
        return _json(200, holds_view(held))

    @app.post("/queue/hold")
    def hold_queue():
        return change_hold(HoldAction.HOLD)

    @app.post("/queue/drain")
    def drain_queue():
        return change_hold(HoldAction.DRAIN)

    @app.post("/queue/resume")
    def resume_queue():
        return change_hold(HoldAction.RESUME)

    @app.get("/jobs/<name>")
    def get_job(name: str):
        job = service.get(name)
        detail = job_detail(job, service.outlook(job), service.clock())
        return _json(200, {"job": detail})

    @app.delete("/jobs/<name>")
    def cancel_job(name: str):
        job = service.cancel(name, caller())
        return _json(200, {"job": job_detail(job, Outlook(), service.clock())})

    @app.put("/jobs/<name>/priority")
    def change_priority(name: str):
        who = caller()
        body = parse_body(app.current_event.body)
        if "priority" not in body:
            raise InvalidRequest('priority is required, e.g. {"priority": 5}')
        job = service.set_priority(name, body["priority"], who)
        return _json(200, {"job": job_detail(job, service.outlook(job), service.clock())})

    return app


def _json(status: int, body: dict) -> Response:
    return Response(status_code=status, content_type="application/json", body=json.dumps(body))
