// smq ui: the queue in the browser. Plain JavaScript and SVG, no build step: every read goes
// to the local server (smq ui), which signs it and forwards it to the queue's API.
"use strict";

// "fit": the last day, drawn from its first record on.
const FIT = "fit";
const SVG = "http://www.w3.org/2000/svg";
const state = { config: null, span: "24h", jobs: null, timeline: null, shares: null, shown: null };

// -- reading -----------------------------------------------------------------------------

async function call(path, options = {}) {
  let response;
  try {
    response = await fetch(path, options);
  } catch (error) {
    return { ok: false, status: 0, body: { message: "smq ui does not answer (was it stopped?)" } };
  }
  let body = {};
  try { body = await response.json(); } catch (error) { body = { message: response.statusText }; }
  return { ok: response.ok, status: response.status, body };
}

async function refresh() {
  const [jobs, timeline] = await Promise.all([
    call("/api/jobs"),
    call(timelinePath()),
  ]);
  const failed = [jobs, timeline].find((answer) => !answer.ok);
  if (failed) {
    showProblem(failed);
  } else {
    hideProblem();
    state.jobs = jobs.body;
    document.getElementById("queue-name").textContent = `${jobs.body.queue} · ${state.config.queue}`;
    state.timeline = timeline.body;
    if ((jobs.body.shares || []).length) {
      const shares = await call("/api/shares");
      state.shares = shares.ok ? shares.body : state.shares;
    }
    render();
    document.getElementById("refreshed").textContent =
      "updated " + new Date().toLocaleTimeString();
  }
  setTimeout(refresh, (state.config.refresh_seconds || 5) * 1000);
}

function showProblem(answer) {
  const box = document.getElementById("problem");
  const retry = ` Trying again every ${state.config.refresh_seconds || 5} s.`;
  box.textContent = answer.status === 502 || answer.status === 0
    ? `Cannot reach the queue: ${answer.body.message}.${retry}`
    : `The queue answered ${answer.status}: ${answer.body.message}.${retry}`;
  box.hidden = false;
}

function hideProblem() { document.getElementById("problem").hidden = true; }

// -- small helpers -----------------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const node = tag.startsWith("svg:")
    ? document.createElementNS(SVG, tag.slice(4))
    : document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "onclick") node.addEventListener("click", value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function seconds(text) { return text ? Date.parse(text) / 1000 : null; }

function duration(s) {
  if (s === null || s === undefined) return "";
  s = Math.max(0, Math.round(s));
  if (s < 90) return `${s} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86400).toFixed(1)} days`;
}

function clock(text) {
  if (!text) return "";
  const moment = new Date(text);
  const sameDay = moment.toDateString() === new Date().toDateString();
  return sameDay ? moment.toLocaleTimeString() : moment.toLocaleString();
}

function person(arn) { return arn ? arn.split("/").pop() : ""; }

function instancesText(instances) {
  return Object.entries(instances || {}).map(([type, n]) => `${n} × ${type}`).join(", ");
}

function checkpointText(checkpoint) {
  if (!checkpoint) return "no checkpoints declared";
  return checkpoint === "on-stop" ? "checkpoints on stop" : `checkpoints every ${checkpoint} s`;
}

// Priorities from blue (lowest seen) to orange (highest seen).
function priorityColour(priority) {
  const seen = new Set();
  for (const job of (state.jobs && state.jobs.jobs) || []) seen.add(job.priority);
  for (const record of (state.timeline && state.timeline.records) || []) {
    if (record.priority !== null) seen.add(record.priority);
  }
  const sorted = [...seen].sort((a, b) => a - b);
  const at = sorted.length > 1 ? sorted.indexOf(priority) / (sorted.length - 1) : 0.5;
  return `hsl(${Math.round(220 - 190 * Math.max(0, at))}, 75%, 50%)`;
}

function isActive(row) { return row.running_seconds !== undefined; }

// The instances of a capped type the queue holds now: on-demand ones and open reservations.
function instancesOf(answer, type) {
  const reserved = plansOf(answer, type).reduce((sum, plan) => sum + (plan.reserved || 0), 0);
  return (answer.capacity[type] || 0) + reserved;
}

function plansOf(answer, type) { return (answer.plans || []).filter((p) => p.instance_type === type); }

function timelinePath() { return `/api/timeline?since=${state.span === FIT ? "24h" : state.span}`; }

// The window a chart draws: the one asked for, or with "fit" from the first record on.
function chartWindow(answer) {
  const until = seconds(answer.now);
  let since = seconds(answer.since);
  if (state.span === FIT && answer.records.length) {
    const first = Math.min(...answer.records.map((r) => seconds(r.queued_at || r.spans[0].start)));
    since = Math.max(since, first - 1 - (until - first) * 0.05);
  }
  return [since, until];
}

// -- now: lanes and the line -------------------------------------------------------------

function render() {
  renderHolds();
  renderLanes();
  renderQueue();
  renderGantt();
  renderShares();
}

function renderHolds() {
  const holds = state.jobs.holds || [];
  const box = document.getElementById("holds");
  box.hidden = !holds.length;
  box.textContent = holds.map((hold) =>
    `${hold.share ? "Share " + hold.share : "The queue"} is ${hold.drain ? "drained" : "held"} ` +
    `by ${person(hold.by)} since ${clock(hold.since)}: nothing new starts there.`).join(" ");
}

function renderLanes() {
  const answer = state.jobs;
  const plans = Object.fromEntries((answer.plans || []).map((plan) => [plan.arn, plan.name]));
  const lanes = document.getElementById("lanes");
  lanes.replaceChildren();
  for (const type of Object.keys(answer.capacity || {})) {
    const cap = instancesOf(answer, type);
    const taken = [];
    for (const job of answer.jobs.filter(isActive)) {
      const n = job.instances[type] || 0;
      for (let i = 1; i <= n; i++) taken.push({ kind: "job", job, i, n });
    }
    for (const pool of answer.pools || []) {
      const n = pool.instances[type] || 0;
      for (let i = 1; i <= n; i++) taken.push({ kind: "pool", pool, i, n });
    }
    for (const outside of answer.outside || []) {
      const n = outside.instances[type] || 0;
      for (let i = 1; i <= n; i++) taken.push({ kind: "outside", outside, i, n });
    }
    // The reserved instances no job uses are a plan's idle lanes; the rest, on-demand ones.
    for (const plan of plansOf(answer, type)) {
      const free = Math.max(0, (plan.reserved || 0) - (plan.in_use || 0));
      for (let i = 0; i < free && taken.length < cap; i++) taken.push({ kind: "idle", plan: plan.name });
    }
    while (taken.length < cap) taken.push({ kind: "idle" });
    taken.forEach((lane, index) => lanes.append(laneRow(type, index + 1, lane, plans)));
  }
}

function laneRow(type, number, lane, plans) {
  const part = lane.n > 1 ? ` (${lane.i} of ${lane.n})` : "";
  if (lane.kind === "job") {
    const job = lane.job;
    const where = job.training_plan ? `plan ${plans[job.training_plan] || job.training_plan}` : "";
    const doing = job.state === "running" ? `running ${duration(job.running_seconds)}`
      : `${job.state} ${duration(job.running_seconds)}`;
    const facts = [`priority ${job.priority}`, job.share && `share ${job.share}`,
      job.submitter && person(job.submitter), doing, checkpointText(job.checkpoint)];
    const what = el("div", { class: "what", style: `background:${priorityColour(job.priority)}` },
      el("span", { class: "name", text: job.name + part }),
      el("span", { class: "facts", text: facts.filter(Boolean).join(" · ") }));
    return el("div", { class: "lane job", "data-job": job.name, "data-type": type,
      onclick: () => showDetail(job.name) },
      el("div", { class: "where", text: `${type} #${number}${where ? " · " + where : ""}` }), what);
  }
  if (lane.kind === "pool") {
    const pool = lane.pool;
    return el("div", { class: "lane pool", "data-pool": pool.sagemaker_job_name, "data-type": type },
      el("div", { class: "where", text: `${type} #${number}` }),
      el("div", { class: "what" },
        el("span", { class: "name", text: `warm pool of ${pool.job}${part}` }),
        el("span", { class: "facts",
          text: `idle since ${clock(pool.available_since)} · kept ${duration(pool.expires_in_seconds)} more` })));
  }
  if (lane.kind === "outside") {
    return el("div", { class: "lane outside", "data-type": type },
      el("div", { class: "where", text: `${type} #${number}` }),
      el("div", { class: "what", text: `${lane.outside.sagemaker_job_name}${part}: started outside the queue` }));
  }
  const where = `${type} #${number}${lane.plan ? " · plan " + lane.plan : ""}`;
  return el("div", { class: "lane idle", "data-type": type, "data-plan": lane.plan },
    el("div", { class: "where", text: where }),
    el("div", { class: "what", text: lane.plan ? "reserved, idle" : "idle" }));
}

function renderQueue() {
  const waiting = state.jobs.jobs.filter((row) => !isActive(row));
  const body = document.querySelector("#queue tbody");
  body.replaceChildren(...waiting.map((job) => {
    const expected = job.expected_start || {};
    const why = job.dependency && job.position === null
      ? `waits for ${job.dependency}` : job.waiting_reason || (job.state === "pending" ? "starts next" : job.state);
    return el("tr", { class: "queued", "data-job": job.name, onclick: () => showDetail(job.name) },
      el("td", { text: job.position ?? "–" }), el("td", { text: job.name }),
      el("td", { text: job.priority }), el("td", { text: job.share || "" }),
      el("td", { text: person(job.submitter) }), el("td", { text: instancesText(job.instances) }),
      el("td", { text: clock(expected.likely) }), el("td", { text: clock(expected.at_latest) }),
      el("td", { class: "why", text: why }));
  }));
  document.getElementById("queue-empty").hidden = waiting.length > 0;
  const more = state.jobs.waiting > waiting.length ? `, the first ${waiting.length} shown` : "";
  document.getElementById("waiting-count").textContent = `(${state.jobs.waiting} waiting${more})`;
}

// -- one job -----------------------------------------------------------------------------

async function showDetail(name) {
  state.shown = name;
  const answer = await call(`/api/jobs/${encodeURIComponent(name)}`);
  const body = document.getElementById("detail-body");
  document.getElementById("detail").hidden = false;
  if (!answer.ok) {
    body.replaceChildren(el("h2", { text: name }), el("p", { class: "problem", text: answer.body.message }));
    return;
  }
  const job = answer.body.job;
  const facts = [
    ["State", job.state], ["Priority", job.priority], ["Share", job.share],
    ["Submitter", job.submitter], ["Instances", instancesText(job.instances)],
    ["Position", job.position], ["Likely start", clock((job.expected_start || {}).likely)],
    ["Why it waits", job.waiting_reason], ["Submitted", clock(job.submitted_at)],
    ["Checkpoints", checkpointText(job.checkpoint)], ["Preemptions", job.preemptions],
    ["Ran in all", duration(job.total_runtime_seconds)], ["Failure", job.failure_reason],
  ].filter(([, value]) => value !== null && value !== undefined && value !== "");
  const attempts = el("table", { class: "attempts" },
    el("thead", {}, el("tr", {}, ...["#", "SageMaker job", "Started", "Ended", "Outcome", "Start", "Logs"].map((h) => el("th", { text: h })))),
    el("tbody", {}, ...job.attempts.map((a) => el("tr", {},
      el("td", { text: a.attempt }), el("td", {}, consoleLink(a.sagemaker_job_name)),
      el("td", { text: clock(a.started_at) }), el("td", { text: clock(a.ended_at) }),
      el("td", { text: a.outcome ? a.outcome + (a.preempted_by ? ` by ${a.preempted_by}` : "") : "running" }),
      el("td", { text: a.start }), el("td", {}, logsLink(a.sagemaker_job_name))))));
  const history = el("ul", { class: "history" }, ...job.history.map((h) =>
    el("li", { text: `${clock(h.at)} ${h.action}${h.by ? " by " + person(h.by) : ""}` +
      (h.preempted_by ? ` (by ${h.preempted_by})` : "") +
      (h.lost_work_seconds ? `, lost ${duration(h.lost_work_seconds)} of work` : "") })));
  body.replaceChildren(
    el("h2", { text: job.name }),
    el("dl", {}, ...facts.flatMap(([key, value]) => [el("dt", { text: key }), el("dd", { text: String(value) })])),
    actions(job),
    el("h3", { text: "Attempts" }), attempts,
    el("p", {}, "Logs: ", el("code", { text: `smq logs ${job.name}` })),
    el("h3", { text: "History" }), history);
}

// A page of the AWS console in the queue's region.
function consoleUrl(service, fragment) {
  const region = state.config.region || "us-east-1";
  return `https://${region}.console.aws.amazon.com/${service}/home?region=${region}${fragment}`;
}

function consoleLink(sagemakerJob) {
  return el("a", { href: consoleUrl("sagemaker", `#/jobs/${encodeURIComponent(sagemakerJob)}`),
    target: "_blank", rel: "noopener", text: sagemakerJob });
}

// The attempt's training log streams (<job>/algo-1-...) in the CloudWatch console.
function logsLink(sagemakerJob) {
  const group = "$252Faws$252Fsagemaker$252FTrainingJobs";
  const href = consoleUrl("cloudwatch",
    `#logsV2:log-groups/log-group/${group}$3FlogStreamNameFilter$3D${encodeURIComponent(sagemakerJob)}`);
  return el("a", { href, target: "_blank", rel: "noopener", class: "logs", text: "logs" });
}

function actions(job) {
  if (!state.config.allow_actions || ["completed", "failed", "cancelled", "stopped"].includes(job.state)) return null;
  const answer = el("span", { class: "answer" });
  const priority = el("input", { type: "number", value: job.priority, "aria-label": "new priority" });
  const act = async (path, body) => {
    const result = await call(path, { method: "POST", body: JSON.stringify(body || {}),
      headers: { "Content-Type": "application/json", "X-Smq-Ui": "1" } });
    answer.className = result.ok ? "answer" : "answer refused";
    answer.textContent = result.ok ? "done" : `refused: ${result.body.message}`;
    if (result.ok) showDetail(job.name);
  };
  const base = `/api/jobs/${encodeURIComponent(job.name)}`;
  return el("div", { class: "actions" },
    el("button", { class: "cancel", text: "Cancel job", onclick: () => act(`${base}/cancel`) }),
    priority,
    el("button", { class: "set-priority", text: "Set priority",
      onclick: () => act(`${base}/priority`, { priority: Number(priority.value) }) }),
    answer);
}

// -- start -------------------------------------------------------------------------------

async function start() {
  const config = await call("/api/config");
  state.config = config.ok ? config.body : { refresh_seconds: 5, allow_actions: false };
  document.getElementById("queue-name").textContent = state.config.queue || "";
  document.getElementById("detail-close").addEventListener("click", () => {
    document.getElementById("detail").hidden = true;
    state.shown = null;
  });
  for (const button of document.querySelectorAll("#zoom button")) {
    button.addEventListener("click", async () => {
      state.span = button.dataset.span;
      for (const other of document.querySelectorAll("#zoom button")) other.classList.toggle("chosen", other === button);
      const timeline = await call(timelinePath());
      if (timeline.ok && state.jobs) { state.timeline = timeline.body; renderGantt(); renderShares(); }
    });
  }
  refresh();
}

start();
