// svc's operator console: a client of the admin XRPC API and nothing else.
//
// Login is the AT Protocol way (docs/auth.md): a session on the admin's PDS, a service-auth
// token from it for pub.svc.auth.authorize, and the PKCE code exchange at /oauth/authorize
// and /oauth/token. The access token lives in this module's memory only: no storage, no
// cookie; closing the tab ends the session. Text from the API is only ever set as text
// (textContent), never parsed as HTML.

const session = { token: null, did: null, handle: null };

/// An error the API answered, in its envelope.
class ApiError extends Error {
  constructor(status, error, message) {
    super(message || error || `HTTP ${status}`);
    this.status = status;
    this.error = error;
  }
}

async function json(response) {
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = null; }
  if (!response.ok) {
    const e = body && typeof body.error === "object" ? body.error : body || {};
    throw new ApiError(response.status, e.error || e.code || body?.error, e.message || body?.message || text);
  }
  return body;
}

/// Calls an XRPC method of svc with the session's token: a query with `params`, a
/// procedure with `body`.
async function xrpc(nsid, { params, body } = {}) {
  const query = params ? "?" + new URLSearchParams(params).toString() : "";
  const init = { method: body === undefined ? "GET" : "POST", headers: {} };
  if (session.token) init.headers.Authorization = `Bearer ${session.token}`;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  return json(await fetch(`/xrpc/${nsid}${query}`, init));
}

function base64url(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/// Logs in: PDS session, service-auth token, PKCE exchange. `totp` answers svc's request
/// for a second factor, when the account has one.
async function login(pds, handle, password, totp) {
  pds = pds.replace(/\/+$/, "");
  const pdsSession = await json(await fetch(`${pds}/xrpc/com.atproto.server.createSession`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ identifier: handle, password }),
  }));
  const service = await json(await fetch("/.well-known/did.json"));
  const auth = await json(await fetch(
    `${pds}/xrpc/com.atproto.server.getServiceAuth?` +
      new URLSearchParams({ aud: service.id, lxm: "pub.svc.auth.authorize" }),
    { headers: { Authorization: `Bearer ${pdsSession.accessJwt}` } },
  ));
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
  const code = await json(await fetch("/oauth/authorize", {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${auth.token}` },
    body: JSON.stringify({ code_challenge: challenge, code_challenge_method: "S256" }),
  }));
  const exchange = await fetch("/oauth/token", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ grant_type: "authorization_code", code: code.code, code_verifier: verifier }),
  });
  let tokens;
  if (exchange.status === 403) {
    const body = await exchange.json();
    if (body.error !== "mfa_required") throw new ApiError(403, body.error, body.error_description || body.error);
    if (!totp) throw new ApiError(403, "mfa_required", "This account has a second factor: enter the code from your authenticator.");
    tokens = await json(await fetch("/oauth/mfa/verify", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ mfa_token: body.mfa_token, method: "totp", code: totp }),
    }));
  } else {
    tokens = await json(exchange);
  }
  session.token = tokens.access_token;
  session.did = pdsSession.did;
  session.handle = pdsSession.handle;
}

// --- rendering ------------------------------------------------------------------------

/// An element with attributes and children (strings become text nodes).
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

function table(headers, rows, attrs = {}) {
  return el("table", attrs, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))), el("tbody", {}, rows));
}

function fmtTime(t) {
  return t ? new Date(t).toLocaleString() : "";
}

function fmtDuration(seconds) {
  if (!isFinite(seconds)) return "";
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
}

function notice(text, kind = "info") {
  const p = el("p", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
  return p;
}

const view = () => document.getElementById("view");
let timer = null;

/// Shows a page: `build` fills the section; `every` (ms) rebuilds it on a timer.
async function show(build, every) {
  clearInterval(timer);
  const section = view();
  const run = async () => {
    try {
      const content = await build();
      section.replaceChildren(...[content].flat());
    } catch (e) {
      section.replaceChildren(notice(describe(e), "error"));
      if (e.status === 401) logout("Your session ended: log in again.");
    }
  };
  await run();
  if (every) timer = setInterval(run, every);
}

function describe(e) {
  if (e instanceof ApiError) return `${e.error || "Error"}: ${e.message}`;
  return String(e.message || e);
}

// --- pages ----------------------------------------------------------------------------

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children.flat()) if (c) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

const PALETTE = ["#1f4e79", "#c0504d", "#9bbb59", "#8064a2", "#4bacc6", "#f79646", "#2c4d75", "#772c2a", "#5f7530", "#4d3b62", "#276a7c"];

/// The lag chart: seconds behind per model over the samples the node kept (the last hour).
function lagChart(samples) {
  const [w, h, pad] = [720, 200, 36];
  if (samples.length === 0) return el("p", { id: "lag-chart-empty" }, "No sample yet: the node samples every 30 s.");
  const times = samples.map((s) => Date.parse(s.at));
  const [t0, t1] = [Math.min(...times), Math.max(...times, Math.min(...times) + 1)];
  const models = [...new Set(samples.flatMap((s) => s.models.map((m) => m.model)))];
  const worst = Math.max(1, ...samples.flatMap((s) => s.models.map((m) => m.behindMs / 1000)));
  const x = (t) => pad + ((t - t0) / (t1 - t0)) * (w - 2 * pad);
  const y = (v) => h - pad + 10 - (v / worst) * (h - 2 * pad);
  const lines = models.map((model, i) => {
    const points = samples.map((s, j) => {
      const m = s.models.find((m) => m.model === model);
      return m ? `${x(times[j]).toFixed(1)},${y(m.behindMs / 1000).toFixed(1)}` : null;
    }).filter(Boolean).join(" ");
    return svg("polyline", { points, fill: "none", stroke: PALETTE[i % PALETTE.length], "stroke-width": 1.5, "data-model": model });
  });
  const legend = models.map((model, i) => svg("text", { x: w - pad + 4, y: 14 + i * 13, fill: PALETTE[i % PALETTE.length], "font-size": 10 }, model));
  return svg("svg", { id: "lag-chart", viewBox: `0 0 ${w + 80} ${h + 10}`, width: "100%", role: "img", "aria-label": "seconds behind the log per read model, last hour" },
    svg("line", { x1: pad, y1: h - pad + 10, x2: w - pad, y2: h - pad + 10, stroke: "#999" }),
    svg("line", { x1: pad, y1: 10, x2: pad, y2: h - pad + 10, stroke: "#999" }),
    svg("text", { x: 2, y: 16, "font-size": 10 }, `${worst.toFixed(1)} s`),
    svg("text", { x: 2, y: h - pad + 10, "font-size": 10 }, "0"),
    svg("text", { x: pad, y: h + 6, "font-size": 10 }, new Date(t0).toLocaleTimeString()),
    svg("text", { x: w - pad - 50, y: h + 6, "font-size": 10 }, new Date(t1).toLocaleTimeString()),
    lines, legend);
}

async function overview() {
  const [health, readiness, firehose, hosts] = await Promise.all([
    xrpc("pub.svc.admin.getSystemHealth"),
    json(await fetch("/health/readiness")).catch(() => null),
    xrpc("pub.svc.admin.getFirehoseStatus"),
    xrpc("pub.svc.admin.listPDSes"),
  ]);
  const caught = new Map((readiness?.projections || []).map((p) => [p.model, p]));
  return [
    el("h1", {}, "Overview"),
    el("p", { id: "status", class: `status ${health.status}` }, `Status: ${health.status}`, ` · up ${fmtDuration(health.uptime)}`),
    el("h2", {}, "Backends"),
    table(["backend", "healthy", "latency"], health.databases.map((d) =>
      el("tr", {}, el("td", {}, d.name), el("td", {}, d.healthy ? "yes" : `no: ${d.error || ""}`), el("td", {}, `${d.latencyMs} ms`))), { id: "backends" }),
    el("h2", {}, "Read models"),
    table(["model", "version", "caught up", "behind (events)", "behind (time)", "needs a replay"], health.readModels.map((m) => {
      const c = caught.get(m.name);
      return el("tr", { dataset: { model: m.name } },
        el("td", {}, m.name),
        el("td", {}, m.activeVersion ?? "none"),
        el("td", {}, c ? (c.caughtUp ? "yes" : "no") : ""),
        el("td", { class: "lag" }, m.lag ?? ""),
        el("td", { class: "behind" }, m.behindMs === undefined ? "" : fmtDuration(m.behindMs / 1000)),
        el("td", {}, m.needsReplay ? "yes" : "no"));
    }), { id: "models" }),
    el("h2", {}, "Time behind the log, last hour"),
    lagChart(health.lagHistory || []),
    el("h2", {}, "Event sources"),
    firehose.sources.length ? table(["source", "URL", "cursor stored", "last event", "since"], firehose.sources.map((src) =>
      el("tr", { dataset: { url: src.url } }, el("td", {}, src.type), el("td", {}, src.url), el("td", { class: "cursor" }, src.storedCursor ?? ""),
        el("td", {}, fmtTime(src.lastEventAt)), el("td", {}, src.lagSeconds === undefined ? "" : fmtDuration(src.lagSeconds)))), { id: "sources" })
      : el("p", {}, "No event source yet (a seeded node, or one that follows nothing)."),
    el("h2", {}, `Repository hosts (${hosts.stats.total}, ${hosts.stats.healthy} active in the last day)`),
    hosts.stats.items.length ? table(["host", "status", "repositories", "records", "last seen"], hosts.stats.items.map((h) =>
      el("tr", { dataset: { host: h.pdsUrl } }, el("td", {}, h.pdsUrl), el("td", {}, h.status), el("td", {}, h.userCount ?? ""),
        el("td", {}, h.recordCount ?? ""), el("td", {}, fmtTime(h.lastSeen)))), { id: "hosts" }) : el("p", {}, "No host yet."),
  ];
}

/// The events shown under their dead letter's row, by log offset (kept across refreshes).
const shownEvents = new Map();

/// Shows (or hides) under a dead letter's row the event it parked, as the log holds it
/// (read back through traceRecord, which reads each event its record's layers name).
async function toggleEvent(uri, offset) {
  if (shownEvents.has(offset)) {
    shownEvents.delete(offset);
  } else {
    try {
      const t = await xrpc("pub.svc.admin.traceRecord", { params: { uri } });
      shownEvents.set(offset, t.events.find((e) => e.offset === offset) || "The event is no longer in the log.");
    } catch (e) {
      shownEvents.set(offset, describe(e));
    }
  }
  await route();
}

async function deadLetters() {
  const filter = deadLetters.filter || (deadLetters.filter = { model: "", errorType: "", key: "" });
  const listed = await xrpc("pub.svc.admin.listDLQEntries", { params: { limit: 100, includeSuperseded: "true" } });
  // Indexes address the default listing (letters nothing superseded), in log order.
  let index = 0;
  const entries = listed.entries.map((e) => ({ ...e, index: e.supersededBy ? null : index++ }));
  const shown = entries.filter((e) =>
    (!filter.model || e.model === filter.model) && (!filter.errorType || e.errorType === filter.errorType) &&
    (!filter.key || (e.key || "").includes(filter.key) || (e.uri || "").includes(filter.key)));
  const select = (name, values) => el("select", { name, onchange: (ev) => { filter[name] = ev.target.value; route(); } },
    el("option", { value: "" }, `every ${name === "errorType" ? "error type" : name}`),
    [...new Set(values)].map((v) => el("option", { value: v, selected: filter[name] === v }, v)));
  const eventRow = (e) => shownEvents.has(e.offset) &&
    el("tr", { class: "event", dataset: { offset: e.offset } }, el("td", { colspan: 8 }, el("pre", {},
      typeof shownEvents.get(e.offset) === "string" ? shownEvents.get(e.offset) : JSON.stringify(shownEvents.get(e.offset), null, 2))));
  const rows = shown.flatMap((e) => [el("tr", { dataset: { uri: e.uri || "", offset: e.offset } },
    el("td", {}, e.model), el("td", {}, e.kind), el("td", {}, e.uri || e.key), el("td", {}, e.errorType), el("td", {}, e.error),
    el("td", {}, fmtTime(e.timestamp)),
    el("td", { class: "letter-state" }, e.supersededBy ? `superseded by offset ${e.supersededBy.offset}`
      : e.heldBehind ? `held behind offset ${e.heldBehind.offset} (released on upgrade)` : "parked"),
    el("td", {}, e.uri ? el("button", { class: "show-event", onclick: () => toggleEvent(e.uri, e.offset) }, "Event") : "", e.index === null ? "" : [
      el("button", { class: "retry", onclick: () => act("pub.svc.admin.retryDLQEntry", { index: e.index }, "Retried") }, "Retry"),
      el("button", { class: "dismiss", onclick: () => act("pub.svc.admin.dismissDLQEntry", { index: e.index }, "Dismissed") }, "Dismiss"),
    ])), eventRow(e)].filter(Boolean));
  return [
    el("h1", {}, "Dead letters"),
    el("p", {}, `${listed.total} in all (superseded ones included); each was kept out of its read model, and nothing waits behind it.`),
    el("div", { class: "filters" },
      select("model", entries.map((e) => e.model)), select("errorType", entries.map((e) => e.errorType)),
      el("input", { name: "key", placeholder: "key or URI contains", value: filter.key, onchange: (ev) => { filter.key = ev.target.value; route(); } }),
      el("button", { id: "retry-all", onclick: () => act("pub.svc.admin.retryAllDLQ", filter, "Retried all") },
        filter.model || filter.errorType || filter.key ? "Retry all shown" : "Retry all"),
      el("button", { id: "purge", onclick: () => act("pub.svc.admin.purgeOldDLQ", { olderThanDays: 7 }, "Purged") }, "Purge older than 7 days")),
    shown.length ? table(["model", "kind", "record or key", "type", "error", "entered the log", "state", ""], rows, { id: "letters" })
      : el("p", { id: "letters-empty" }, "No dead letter."),
  ];
}

/// Remembers the rate of each running operation between refreshes, for its ETA.
const seen = new Map();

function progressOf(op) {
  const now = Date.now() / 1000;
  const before = seen.get(op.id);
  seen.set(op.id, { at: now, done: op.recordsProcessed });
  let rate = null;
  if (before && now > before.at && op.recordsProcessed >= before.done) rate = (op.recordsProcessed - before.done) / (now - before.at);
  const left = op.recordsTotal ? op.recordsTotal - op.recordsProcessed : null;
  const eta = rate && left !== null ? left / rate : null;
  return el("div", { class: "progress", dataset: { id: op.id, status: op.status } },
    el("progress", { max: 100, value: op.progress }),
    el("span", { class: "percent" }, `${op.progress} %`),
    el("span", {}, ` ${op.recordsProcessed}${op.recordsTotal ? ` of ${op.recordsTotal}` : ""} events`),
    rate !== null ? el("span", {}, ` · ${Math.round(rate)}/s`) : null,
    eta !== null && op.status === "running" ? el("span", {}, ` · about ${fmtDuration(eta)} left`) : null);
}

async function operations() {
  // Every operation, running or ended (getBackfillHistory lists only the ended ones).
  const history = await xrpc("pub.svc.admin.getBackfillStatus");
  const rows = history.operations.map((op) => el("tr", { dataset: { id: op.id, status: op.status } },
    el("td", {}, op.type), el("td", { class: "op-status" }, op.status), el("td", {}, progressOf(op)),
    el("td", {}, fmtTime(op.startedAt)), el("td", {}, fmtTime(op.completedAt)), el("td", {}, op.error || ""),
    el("td", {}, op.status === "running" ? el("button", { class: "cancel", onclick: () => act("pub.svc.admin.cancelBackfill", { id: op.id },
      (out) => (out.success ? `Cancelled ${op.id}.` : `Not cancelled: it ended ${out.status}.`)) }, "Cancel") : "")));
  return [
    el("h1", {}, "Operations"),
    el("div", { class: "actions" },
      el("button", { id: "trigger-reindex", onclick: () => act("pub.svc.admin.triggerFullReindex", {}, "Started") }, "Full reindex"),
      el("button", { id: "trigger-did-sync", onclick: () => act("pub.svc.admin.triggerDIDSync", {}, "Started") }, "DID sync"),
      el("button", { id: "trigger-pds-scan", onclick: () => act("pub.svc.admin.triggerPDSScan", {}, "Started") }, "PDS scan"),
      el("button", { id: "trigger-freshness", onclick: () => act("pub.svc.admin.triggerFreshnessScan", {}, "Started") }, "Freshness scan"),
      el("select", { id: "backfill-type" }, ["citationExtraction", "governanceSync", "pdsScan", "freshnessScan", "didSync", "fullReindex"].map((t) => el("option", { value: t }, t))),
      el("button", { id: "trigger-backfill", onclick: () => act("pub.svc.admin.triggerBackfill", { type: document.getElementById("backfill-type").value }, "Started") }, "Backfill")),
    history.operations.length ? table(["operation", "status", "progress", "started", "ended", "error", ""], rows, { id: "operations" })
      : el("p", {}, "No operation yet."),
  ];
}

async function trace() {
  const form = el("form", { id: "trace-form" },
    el("label", {}, "AT URI ", el("input", { id: "trace-uri", name: "uri", size: 70, required: true, pattern: "at://[^\\/\\s]+\\/[^\\/\\s]+\\/[^\\/\\s]+", value: trace.uri || "", placeholder: "at://did:plc:…/pub.svc.eprint.submission/…" })),
    el("button", { type: "submit" }, "Trace"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    trace.uri = form.uri.value.trim();
    route();
  });
  if (!trace.uri) return [el("h1", {}, "Trace a record"), form];
  let t;
  try {
    t = await xrpc("pub.svc.admin.traceRecord", { params: { uri: trace.uri } });
  } catch (e) {
    if (e.status === 401) throw e;
    // The form stays, with the API's reason, for the operator to correct the URI.
    return [el("h1", {}, "Trace a record"), form, notice(describe(e), "error")];
  }
  const layer = (name, state, offset, readTo, detail) => el("tr", { dataset: { layer: name } },
    el("td", {}, name), el("td", { class: "state" }, state), el("td", {}, offset ?? ""), el("td", {}, readTo ?? ""),
    el("td", {}, offset === undefined || offset === null ? "" : readTo > offset ? "applied" : "not yet"), el("td", {}, detail || ""));
  const source = (s) => {
    switch (s.type) {
      case "firehose": return `firehose ${s.url} frame ${s.seq}`;
      case "jetstream": return `Jetstream ${s.url} at ${s.timeUs}`;
      case "backfill": return `backfill from ${s.host}`;
      case "seed": return `seed from ${s.file}`;
      case "command": return `${s.nsid} by ${s.caller}`;
      default: return JSON.stringify(s);
    }
  };
  return [
    el("h1", {}, "Trace a record"), form,
    el("p", {}, `Repository ${t.did}, collection ${t.collection}, key ${t.rkey}: log partition ${t.partition}, which ends at offset ${t.logEnd}.`),
    table(["layer", "state", "event offset", "read to", "", "detail"], [
      ...t.models.map((m) => layer(`model ${m.model}${m.version ? ` v${m.version}` : ""}`, m.state, m.offset, m.readTo, m.rev ? `rev ${m.rev}` : "")),
      layer(`search index${t.search.version ? ` v${t.search.version}` : ""}`, t.search.indexed ? "indexed" : "no document", null, t.search.readTo, ""),
      ...t.deadLetters.map((d) => layer(`dead letter (${d.model})`, "parked", d.offset, null, d.reason)),
    ], { id: "trace" }),
    el("h2", {}, "Log events"),
    table(["offset", "kind", "entered the log", "source"], t.events.map((e) =>
      el("tr", { dataset: { offset: e.offset } }, el("td", {}, e.offset), el("td", {}, e.kind), el("td", {}, fmtTime(e.appendedAt)), el("td", { class: "source" }, source(e.source)))),
      { id: "trace-events" }),
  ];
}

/// Runs an admin procedure from a button, shows the page again and says what happened:
/// `said`, with the API's message if it gave one (or `said(answer)`); a refusal shows the
/// API's error.
async function act(nsid, body, said) {
  try {
    const out = await xrpc(nsid, { body });
    await route();
    view().prepend(notice(typeof said === "function" ? said(out) : `${said}${out && out.message ? `: ${out.message}` : "."}`));
  } catch (e) {
    view().prepend(notice(describe(e), "error"));
  }
}

/// A text field and a button that submits it (`onsubmit` gets the value).
function searchForm(id, label, value, onsubmit) {
  const form = el("form", { id, class: "filters" }, el("input", { name: "q", placeholder: label, value: value || "", size: 40 }), el("button", { type: "submit" }, "Search"));
  form.addEventListener("submit", (ev) => { ev.preventDefault(); onsubmit(form.q.value.trim()); });
  return form;
}

const COLLECTIONS = { review: "pub.svc.review.comment", eprint: "pub.svc.eprint.submission" };

/// A take-down button with its reason field for the record `uri`.
function takeDown(uri, collection) {
  const reason = el("input", { class: "reason", placeholder: "reason", size: 16 });
  return el("span", { class: "take-down" }, reason,
    el("button", { class: "take-down", onclick: () => {
      if (!reason.value.trim()) { reason.focus(); return; }
      act("pub.svc.admin.deleteContent", { uri, collection, reason: reason.value.trim() }, `Took down ${uri}`);
    } }, "Take down"));
}

async function content() {
  const q = content.q || "";
  const [eprints, reviews, violations] = await Promise.all([
    xrpc("pub.svc.admin.listEprints", { params: { limit: 25, ...(q ? { q } : {}) } }),
    xrpc("pub.svc.admin.listReviews", { params: { limit: 50 } }),
    xrpc("pub.svc.admin.listViolations", { params: { limit: 50 } }),
  ]);
  const users = q ? (await xrpc("pub.svc.admin.searchUsers", { params: { query: q, limit: 25 } })).users : [];
  return [
    el("h1", {}, "Content"),
    searchForm("content-search", "title words, handle or DID", q, (v) => { content.q = v; route(); }),
    q ? [el("h2", {}, "Users"), table(["handle", "DID", "eprints", "reviews", "endorsements", "roles"], users.map((u) =>
      el("tr", { dataset: { did: u.did } }, el("td", {}, u.handle || ""), el("td", {}, u.did), el("td", {}, u.eprintCount), el("td", {}, u.reviewCount),
        el("td", {}, u.endorsementCount), el("td", {}, (u.roles || []).join(", ")))), { id: "users" })] : null,
    el("h2", {}, `Eprints (${eprints.total})`),
    table(["title", "author", "created", ""], eprints.items.map((e) =>
      el("tr", { dataset: { uri: e.uri } }, el("td", {}, e.title), el("td", {}, e.authorDid), el("td", {}, fmtTime(e.createdAt)),
        el("td", {}, takeDown(e.uri, COLLECTIONS.eprint)))), { id: "eprints" }),
    el("h2", {}, `Reviews (${reviews.total})`),
    table(["review", "of", "reviewer", "created", ""], reviews.items.map((r) =>
      el("tr", { dataset: { uri: r.uri } }, el("td", {}, r.uri), el("td", {}, r.eprintUri), el("td", {}, r.reviewerDid), el("td", {}, fmtTime(r.createdAt)),
        el("td", {}, takeDown(r.uri, COLLECTIONS.review)))), { id: "reviews" }),
    el("h2", {}, "Violations and reports"),
    violations.violations.length ? table(["when", "type", "record", "reason", "by"], violations.violations.map((v) =>
      el("tr", { dataset: { uri: v.uri || "" } }, el("td", {}, fmtTime(v.createdAt)), el("td", {}, v.type || v.errorType || ""), el("td", {}, v.uri || v.did || ""),
        el("td", {}, v.reason || v.description || ""), el("td", {}, v.actorDid || ""))), { id: "violations" }) : el("p", {}, "None."),
  ];
}

const ROLES = ["admin", "moderator", "graph-editor", "author", "reader", "alpha-tester", "premium"];

async function people() {
  const applications = await xrpc("pub.svc.admin.listAlphaApplications", { params: { limit: 50 } });
  const did = el("input", { id: "role-did", placeholder: "did:plc:…", size: 36, required: true, pattern: "did:[a-z]+:[A-Za-z0-9._:%\\-]+" });
  const role = el("select", { id: "role-name" }, ROLES.map((r) => el("option", { value: r }, r)));
  // The form checks the DID before sending (the API checks again).
  const grant = (nsid, what) => did.reportValidity() && act(nsid, { did: did.value.trim(), role: role.value }, what);
  return [
    el("h1", {}, "Roles and alpha applications"),
    el("div", { class: "filters" }, did, role,
      el("button", { id: "assign-role", onclick: () => grant("pub.svc.admin.assignRole", "Granted") }, "Grant"),
      el("button", { id: "revoke-role", onclick: () => grant("pub.svc.admin.revokeRole", "Revoked") }, "Revoke")),
    el("h2", {}, `Alpha applications (${applications.total})`),
    applications.items.length ? table(["applicant", "status", "sector", "career stage", "applied", ""], applications.items.map((a) =>
      el("tr", { dataset: { did: a.did } }, el("td", {}, a.handle || a.did), el("td", {}, a.status), el("td", {}, a.sector || ""), el("td", {}, a.careerStage || ""),
        el("td", {}, fmtTime(a.createdAt)),
        el("td", {}, ["approve", "reject", "revoke"].map((action) =>
          el("button", { onclick: () => act("pub.svc.admin.updateAlphaApplication", { did: a.did, action }, `${action}: ${a.did}`) }, action))))),
      { id: "applications" }) : el("p", {}, "No application."),
  ];
}

async function audit() {
  const actor = audit.actor || "";
  const log = await xrpc("pub.svc.admin.getAuditLog", { params: { limit: 100, ...(actor ? { actorDid: actor } : {}) } });
  return [
    el("h1", {}, "Audit log"),
    searchForm("audit-filter", "actor DID", actor, (v) => { audit.actor = v; route(); }),
    el("p", {}, `${log.total} entries${actor ? ` by ${actor}` : ""}; the newest 100:`),
    table(["when", "action", "by", "target", "details"], log.entries.map((e) =>
      el("tr", {}, el("td", {}, fmtTime(e.timestamp)), el("td", {}, e.action), el("td", {}, e.actorDid), el("td", {}, e.targetDid || ""),
        el("td", {}, e.details ? JSON.stringify(e.details) : ""))), { id: "audit" }),
  ];
}

/// p50/p95/p99 per operation (the API answers microseconds), as bars on one scale.
async function latency() {
  const { metrics } = await xrpc("pub.svc.admin.getEndpointMetrics");
  const rows = metrics.filter((m) => m.requestCount > 0).sort((a, b) => b.p99 - a.p99);
  const worst = Math.max(1, ...rows.map((m) => m.p99));
  const bar = (m) => svg("svg", { width: 240, height: 14, viewBox: "0 0 240 14" },
    svg("rect", { x: 0, y: 1, width: (240 * m.p99) / worst, height: 12, fill: "#c9d6e3" }),
    svg("rect", { x: 0, y: 3, width: (240 * m.p95) / worst, height: 8, fill: "#7f9fbf" }),
    svg("rect", { x: 0, y: 5, width: (240 * m.p50) / worst, height: 4, fill: "#1f4e79" }));
  return [
    el("h1", {}, "Endpoint latencies"),
    el("p", {}, "Since this node started; slowest p99 first. Bars: p50 (dark), p95, p99 (light), one scale."),
    table(["operation", "requests", "errors", "p50 ms", "p95 ms", "p99 ms", ""], rows.map((m) =>
      el("tr", { dataset: { path: m.path } }, el("td", {}, `${m.method} ${m.path}`), el("td", {}, m.requestCount), el("td", {}, m.errorCount),
        [m.p50, m.p95, m.p99].map((us) => el("td", {}, (us / 1000).toFixed(2))), el("td", {}, bar(m)))), { id: "latency" }),
  ];
}

const pages = {
  overview: [overview, 5000], "dead-letters": [deadLetters, 5000], operations: [operations, 1000], trace: [trace],
  content: [content], people: [people], audit: [audit], latency: [latency, 10000],
};

/// Shows the page the address names (again, after an action), with its own refresh.
async function route() {
  if (!session.token) return;
  const [page, every] = pages[location.hash.slice(1)] || pages.overview;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("current", a.getAttribute("href") === (location.hash || "#overview"));
  await show(page, every);
}

function logout(message) {
  session.token = null;
  clearInterval(timer);
  document.getElementById("view").hidden = true;
  document.getElementById("nav").hidden = true;
  document.getElementById("who").textContent = "";
  document.getElementById("login").hidden = false;
  document.getElementById("login-error").textContent = message || "";
}

async function submitLogin(ev) {
  ev.preventDefault();
  const form = ev.target;
  const error = document.getElementById("login-error");
  error.textContent = "";
  form.querySelector("button").disabled = true;
  try {
    await login(form.pds.value.trim(), form.handle.value.trim(), form.password.value, form.totp.value.trim());
    form.password.value = "";
    // The console is for admins (every admin operation checks the role on each call too).
    const roles = await xrpc("pub.svc.actor.getMyRoles").catch((e) => { session.token = null; throw e; });
    if (!roles.isAdmin) {
      session.token = null;
      throw new Error(`${session.handle || session.did} is not an admin of this svc: the console is for admins.`);
    }
    document.getElementById("login").hidden = true;
    document.getElementById("view").hidden = false;
    document.getElementById("nav").hidden = false;
    document.getElementById("who").textContent = session.handle || session.did;
    route();
  } catch (e) {
    if (e.error === "mfa_required") document.getElementById("login-totp-row").hidden = false;
    error.textContent = describe(e);
  } finally {
    form.querySelector("button").disabled = false;
  }
}

document.getElementById("login-form").addEventListener("submit", submitLogin);
window.addEventListener("hashchange", route);
