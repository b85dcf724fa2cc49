// smq ui's charts: the timeline (attempts and pools of every job, the instances in use, the
// line's depth) and each share's use over time, in SVG. Loaded before ui.js, whose helpers
// (el, seconds, state, ...) it uses when it draws.
"use strict";

// -- timeline ----------------------------------------------------------------------------

function heldAt(records, t, capped) {
  let held = 0;
  for (const record of records) {
    if (!record.spans.some((s) => seconds(s.start) <= t && t < seconds(s.end))) continue;
    for (const [type, n] of Object.entries(record.instances)) if (capped.has(type)) held += n;
  }
  return held;
}

function depthAt(records, waiting, t) {
  let depth = 0;
  for (const record of records) {
    if (record.kind !== "attempt" || !record.queued_at) continue;
    if (seconds(record.queued_at) <= t && t < seconds(record.spans[0].start)) depth += 1;
  }
  for (const since of waiting) if (since <= t) depth += 1;
  return depth;
}

// When each job in line now joined it: its submission, or the end of its last attempt.
function waitingSince(records) {
  const lastEnd = {};
  for (const record of records) {
    if (record.kind !== "attempt") continue;
    const end = seconds(record.spans[record.spans.length - 1].end);
    lastEnd[record.job] = Math.max(lastEnd[record.job] || 0, end);
  }
  return state.jobs.jobs.filter((row) => !isActive(row))
    .map((row) => Math.max(seconds(row.submitted_at), lastEnd[row.name] || 0));
}

function axis(svg, x, since, until, top, height) {
  const group = el("svg:g", { class: "axis" });
  const step = niceStep((until - since) / 8);
  for (let t = Math.ceil(since / step) * step; t <= until; t += step) {
    group.append(el("svg:line", { x1: x(t), x2: x(t), y1: top, y2: top + height }));
    const label = new Date(t * 1000);
    const text = step >= 86400 ? label.toLocaleDateString()
      : label.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: step < 60 ? "2-digit" : undefined });
    group.append(el("svg:text", { x: x(t) + 2, y: top + 11, text }));
  }
  svg.append(group);
}

function niceStep(raw) {
  const steps = [1, 2, 5, 10, 15, 30, 60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  return steps.find((step) => step >= raw) || 86400;
}

function renderGantt() {
  const answer = state.timeline;
  const records = answer.records;
  const [since, until] = chartWindow(answer);
  const width = Math.max(600, document.getElementById("gantt").clientWidth || 1000);
  const left = 200, right = 20, rowH = 22;
  const x = (t) => left + ((Math.min(Math.max(t, since), until) - since) / (until - since)) * (width - left - right);
  const jobs = [...new Set(records.map((record) => record.job))];
  const rowsTop = 18, stripH = 46, depthH = 46;
  const height = rowsTop + jobs.length * rowH + 12 + stripH + 14 + depthH + 10;
  const svg = el("svg:svg", { width, height, id: "gantt-svg" });
  svg.append(el("svg:defs", {}, hatch("pool-hatch", "#93c5fd", "#dbeafe")));
  axis(svg, x, since, until, 0, height);
  jobs.forEach((job, row) => {
    const y = rowsTop + row * rowH;
    svg.append(el("svg:text", { x: 4, y: y + 14, text: job, class: "row-label" }));
    for (const record of records.filter((r) => r.job === job)) drawRecord(svg, record, x, y, rowH);
  });
  const stripTop = rowsTop + jobs.length * rowH + 12;
  const capped = new Set(Object.keys(state.jobs.capacity || {}));
  const capacity = [...capped].reduce((sum, type) => sum + instancesOf(state.jobs, type), 0);
  drawHeld(svg, records, capped, capacity, x, since, until, stripTop, stripH);
  drawDepth(svg, records, x, since, until, stripTop + stripH + 14, depthH);
  svg.append(el("svg:line", { class: "now-line", x1: x(until), x2: x(until), y1: 0, y2: height }));
  const box = document.getElementById("gantt");
  box.replaceChildren(svg);
  if (!records.length) box.append(el("p", { class: "muted", text: "Nothing held the instances in this window." }));
}

function hatch(id, dark, light) {
  return el("svg:pattern", { id, width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
    el("svg:rect", { width: 6, height: 6, fill: light }), el("svg:rect", { width: 3, height: 6, fill: dark }));
}

function drawRecord(svg, record, x, y, rowH) {
  const title = recordTitle(record);
  for (const span of record.spans) {
    const x0 = x(seconds(span.start)), x1 = x(seconds(span.end));
    const fill = span.phase === "running" ? priorityColour(record.priority)
      : span.phase === "pool_idle" ? "url(#pool-hatch)" : null;
    svg.append(el("svg:rect", { x: x0, y: y + 3, width: Math.max(1, x1 - x0), height: rowH - 6,
      class: `bar ${span.phase}`, "data-job": record.job, "data-phase": span.phase, fill },
      el("svg:title", { text: title })));
  }
  const start = x(seconds(record.spans[0].start));
  const end = x(seconds(record.spans[record.spans.length - 1].end));
  if (record.start === "warm") {
    svg.append(el("svg:text", { x: start + 2, y: y + 15, class: "marker-warm", "data-job": record.job, text: "W" },
      el("svg:title", { text: `${record.job} started warm, on a warm pool: no cold start` })));
  }
  if (record.outcome === "preempted") {
    const lost = record.lost_work_seconds ? `lost ${duration(record.lost_work_seconds)} of work`
      : "lost no work (it had saved a checkpoint)";
    svg.append(el("svg:text", { x: end + 2, y: y + 16, class: "marker-preempted", "data-job": record.job, text: "✕" },
      el("svg:title", { text: `${record.job} was preempted: ${lost}` })));
  }
}

function recordTitle(record) {
  const what = record.kind === "pool" ? `warm pool left by ${record.sagemaker_job_name}`
    : `${record.sagemaker_job_name} (priority ${record.priority}, ${record.start} start)`;
  const phases = record.spans.map((s) => `${s.phase} ${duration(seconds(s.end) - seconds(s.start))}`);
  const ended = record.in_progress ? "still going" : record.outcome || "ended";
  return `${record.job}: ${what}; ${phases.join(", ")}; ${ended}`;
}

function samples(since, until, n = 240) {
  return Array.from({ length: n + 1 }, (_, i) => since + ((until - since) * i) / n);
}

function drawHeld(svg, records, capped, capacity, x, since, until, top, height) {
  const times = samples(since, until);
  const held = times.map((t) => heldAt(records, t, capped));
  const most = Math.max(capacity, ...held, 1);
  const y = (n) => top + height - (n / most) * height;
  svg.append(el("svg:rect", { class: "idle", x: x(since), y: y(capacity), width: x(until) - x(since), height: y(0) - y(capacity) },
    el("svg:title", { text: "idle capacity" })));
  svg.append(el("svg:path", { class: "held", d: stepPath(times, held, x, y) }));
  svg.append(el("svg:text", { x: 4, y: top + height / 2 + 4,
    text: `in use of ${capacity}`, class: "strip-label" }));
}

function drawDepth(svg, records, x, since, until, top, height) {
  const waiting = waitingSince(records);
  const times = samples(since, until);
  const depth = times.map((t) => depthAt(records, waiting, t));
  const most = Math.max(1, ...depth);
  const y = (n) => top + height - (n / most) * height;
  svg.append(el("svg:path", { class: "depth", d: times.map((t, i) => `${i ? "L" : "M"}${x(t)},${y(depth[i])}`).join("") }));
  svg.append(el("svg:text", { x: 4, y: top + height / 2 + 4, text: `in line (max ${most})`, class: "strip-label" }));
}

// The area under a step function of the samples.
function stepPath(times, values, x, y) {
  let d = `M${x(times[0])},${y(0)}`;
  times.forEach((t, i) => {
    d += `L${x(t)},${y(values[i])}`;
    if (i + 1 < times.length) d += `L${x(times[i + 1])},${y(values[i])}`;
  });
  return d + `L${x(times[times.length - 1])},${y(0)}Z`;
}

// -- shares ------------------------------------------------------------------------------

function renderShares() {
  const section = document.getElementById("shares");
  const shares = (state.shares && state.shares.shares) || [];
  section.hidden = !shares.length;
  if (!shares.length) return;
  const body = document.querySelector("#share-table tbody");
  body.replaceChildren(...shares.flatMap((share) =>
    Object.entries(share.instance_types).map(([type, use]) =>
      el("tr", { "data-share": share.name },
        el("td", { text: share.name }),
        el("td", { text: share.strategy + (share.borrow_limit ? ` (${share.borrow_limit}%)` : "") }),
        el("td", { text: type }), el("td", { text: use.limit }), el("td", { text: use.in_use }),
        el("td", { class: "borrowed", text: use.borrowed }), el("td", { class: "lent", text: use.lent }),
        el("td", { text: share.waiting })))));
  const charts = document.getElementById("share-charts");
  charts.replaceChildren(...shares.map(shareChart));
}

// A share's use over the window, as the queue counted it at each change (GET /timeline).
function shareChart(share) {
  const answer = state.timeline;
  const [since, until] = chartWindow(answer);
  const width = Math.max(600, document.getElementById("share-charts").clientWidth || 1000);
  const left = 200, height = 60;
  const x = (t) => left + ((t - since) / (until - since)) * (width - left - 20);
  const points = ((answer.shares || []).find((s) => s.share === share.name) || {}).points || [];
  const times = samples(since, until);
  const at = times.map((t) => pointAt(points, t));
  const count = (key) => at.map((p) => (p ? p[key] : 0));
  const [held, limits, lent] = [count("in_use"), count("limit"), count("lent")];
  const limit = Object.values(share.instance_types).reduce((sum, use) => sum + use.limit, 0);
  const most = Math.max(limit, ...limits, ...held.map((n, i) => n + lent[i]), 1);
  const y = (n) => 4 + (height - 8) * (1 - n / most);
  const mostBorrowed = Math.max(0, ...count("borrowed"));
  const mostLent = Math.max(0, ...lent);
  const svg = el("svg:svg", { width, height, class: "share-chart", "data-share": share.name,
    "data-most-borrowed": mostBorrowed, "data-most-lent": mostLent });
  svg.append(el("svg:path", { class: "held", d: stepPath(times, held, x, y) }));
  const over = held.map((n, i) => Math.max(n, limits[i]));
  svg.append(el("svg:path", { class: "borrowed", d: stepPath(times, over, x, y) + stepPath(times, limits, x, y),
    "fill-rule": "evenodd" }, el("svg:title", { text: "borrowed: above its limit" })));
  svg.append(el("svg:path", { class: "lent", d: stepPath(times, held.map((n, i) => n + lent[i]), x, y) +
    stepPath(times, held, x, y), "fill-rule": "evenodd" },
    el("svg:title", { text: "lent: its idle instances other shares borrow" })));
  svg.append(el("svg:path", { class: "limit", d: stepLine(times, limits, x, y) }));
  const told = (mostBorrowed ? `, borrowed up to ${mostBorrowed}` : "") + (mostLent ? `, lent up to ${mostLent}` : "");
  svg.append(el("svg:text", { x: 4, y: height / 2, text: `${share.name}: limit ${limit}${told}` }));
  return svg;
}

// The last of the points (oldest first) at or before t.
function pointAt(points, t) {
  let found = null;
  for (const point of points) if (seconds(point.at) <= t) found = point;
  return found;
}

function stepLine(times, values, x, y) {
  return times.map((t, i) => `${i ? "L" : "M"}${x(t)},${y(values[i])}` +
    (i + 1 < times.length ? `L${x(times[i + 1])},${y(values[i])}` : "")).join("");
}
