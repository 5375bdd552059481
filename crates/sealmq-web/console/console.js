// sealmq's web console: a page over the REST API (docs/rest.md), no framework, no build step.
// It logs in with POST /login (the session cookie), then reads /admin and /messaging.
"use strict";

const API = "/ibmmq/rest/v2";
const CSRF = { "ibm-mq-rest-csrf-token": "console" };
let qmgr = null;
let installation = false; // served by sealmq web: every queue manager of the installation
let roles = [];
const counts = new Map(); // queue -> {puts, gets, at}: the last sample, for rates
const policies = new Map(); // queue or topic -> its policy's attributes
const $ = (id) => document.getElementById(id);

function say(text) { $("status").textContent = text || ""; }

// An error (or its clearing) where the action was taken: the section's own line.
function sayAt(where, text, ok) {
  const el = $(where + "-err");
  if (!el) { say(text); return; }
  el.textContent = text || "";
  el.classList.toggle("ok", Boolean(ok));
}

// Views: the navigation shows one group of sections, or all; a section the user's roles do
// not open stays hidden whatever the view.
let view = (location.hash || "#all").slice(1);
function showView(v) {
  view = v;
  if (location.hash !== "#" + v) history.replaceState(null, "", "#" + v);
  $("qmgr-open-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try { await openQm($("qmgr-open").value.trim()); sayAt("qmgrs", ""); } catch (e) { sayAt("qmgrs", e.message); }
});

for (const b of document.querySelectorAll("#views button")) {
    b.setAttribute("aria-pressed", String(b.dataset.view === v));
  }
  for (const s of document.querySelectorAll("#app section[data-view]")) {
    s.hidden = s.dataset.allowed === "0" || (v !== "all" && s.dataset.view !== v);
  }
}

async function call(method, path, body, headers) {
  const h = Object.assign({}, method === "GET" ? {} : CSRF, headers || {});
  const r = await fetch(API + path, { method, headers: h, body, credentials: "same-origin" });
  if (r.status === 401) { showLogin(); throw new Error("Log in again."); }
  return r;
}

async function json(method, path, body) {
  const r = await call(method, path, body === undefined ? undefined : JSON.stringify(body),
    body === undefined ? {} : { "Content-Type": "application/json" });
  const v = r.status === 204 ? {} : await r.json();
  if (!r.ok) {
    const e = v.error && v.error[0];
    throw new Error(e ? e.message : "HTTP " + r.status);
  }
  return v;
}

function showLogin() {
  $("login-section").hidden = false;
  $("app").hidden = true;
  $("logout").hidden = true;
  $("who").textContent = "";
}

async function start() {
  let me;
  try { me = await json("GET", "/login"); } catch (e) { showLogin(); return; }
  const u = me.user[0];
  roles = u.role;
  $("who").textContent = u.name + " (" + roles.join(", ") + ")";
  $("login-section").hidden = true;
  $("app").hidden = false;
  $("logout").hidden = false;
  const allow = (el, yes) => { el.dataset.allowed = yes ? "1" : "0"; el.hidden = !yes; };
  allow($("define-section"), roles.includes("MQWebAdmin"));
  allow($("put-section"), roles.includes("MQWebUser"));
  allow($("browse-section"), roles.includes("MQWebUser"));
  // Without the read-only role only messaging is open to the user: the page keeps to it.
  const admin = roles.includes("MQWebAdminRO");
  for (const s of document.querySelectorAll(".admin-only")) allow(s, admin);
  // The installation's server (sealmq web) serves every queue manager: the user picks one.
  installation = !u.queueManager;
  $("qmgrs-view").hidden = !installation;
  allow($("qmgrs-section"), installation);
  showView(view);
  if (!installation) { await openQm(u.queueManager); return; }
  const names = admin ? await qmgrList() : [];
  const kept = localStorage.getItem("sealmq.qmgr");
  const running = names.filter((q) => q.state === "running").map((q) => q.name);
  await openQm(running.includes(kept) ? kept : running[0] || null);
}

// The installation's queue managers with their state; Start and Stop for an admin.
async function qmgrList() {
  const v = await json("GET", "/admin/qmgr");
  const body = $("qmgrs").querySelector("tbody");
  body.replaceChildren();
  const cell = (text) => { const td = document.createElement("td"); td.textContent = text; return td; };
  for (const q of v.qmgr) {
    const tr = document.createElement("tr");
    tr.dataset.qmgr = q.name;
    const st = q.status || {};
    tr.append(cell(q.name), cell(q.state), cell(st.started || ""),
      cell(st.connectionCount === undefined ? "" : String(st.connectionCount)));
    const acts = document.createElement("td");
    const button = (label, fn) => {
      const b = document.createElement("button");
      b.type = "button"; b.textContent = label; b.setAttribute("aria-label", label + " " + q.name);
      b.addEventListener("click", () => fn().catch((e) => sayAt("qmgrs", e.message)));
      acts.append(b);
    };
    if (q.state === "running") button("Open", () => openQm(q.name));
    if (roles.includes("MQWebAdmin")) {
      const op = q.state === "running" ? "stop" : "start";
      button(op === "start" ? "Start" : "Stop", async () => {
        if (op === "stop" && !confirm("Stop queue manager " + q.name + "?")) return;
        sayAt("qmgrs", (op === "start" ? "Starting " : "Stopping ") + q.name + "...", true);
        const r = await json("POST", "/admin/action/qmgr/" + encodeURIComponent(q.name) + "/" + op);
        sayAt("qmgrs", (r.message || []).join(" "), true);
        if (op === "stop" && qmgr === q.name) await openQm(null);
        await qmgrList();
      });
    }
    tr.append(acts);
    body.append(tr);
  }
  return v.qmgr;
}

// Shows queue manager `name` (null: none) in every view.
async function openQm(name) {
  qmgr = name;
  $("qmgr-name").textContent = name || "";
  if (installation && name) localStorage.setItem("sealmq.qmgr", name);
  const facts = $("qm-facts");
  facts.replaceChildren();
  if (!name || !roles.includes("MQWebAdminRO")) return;
  const q = await json("GET", "/admin/qmgr/" + encodeURIComponent(name));
  for (const [k, v] of [["Name", name], ["State", q.qmgr[0].state],
    ["Started", new Date(q.qmgr[0].started * 1000).toISOString()]]) {
    const dt = document.createElement("dt"); dt.textContent = k;
    const dd = document.createElement("dd"); dd.textContent = v;
    facts.append(dt, dd);
  }
  await refresh();
  await slow();
}

// What changes less often than depths: connections, channel status, HA, the error log.
async function slow() {
  if (!qmgr || !roles.includes("MQWebAdminRO")) return;
  await protection();
  await connections();
  await channels();
  await listeners();
  await pubsub();
  await security();
  await ha();
  await errorLog();
}

function base() { return "/admin/qmgr/" + encodeURIComponent(qmgr); }

// runCommandJSON DISPLAY: the parameters of each answer.
async function display(qualifier, name, parameters) {
  const v = await json("POST", "/admin/action/qmgr/" + encodeURIComponent(qmgr) + "/mqsc", {
    type: "runCommandJSON", command: "display", qualifier, name, parameters: parameters || {},
  });
  return (v.commandResponse || []).filter((r) => r.parameters).map((r) => r.parameters);
}

async function refresh() {
  if (!qmgr || !roles.includes("MQWebAdminRO")) return;
  const v = await json("GET", "/admin/qmgr/" + encodeURIComponent(qmgr) + "/queue");
  const rows = [];
  const names = [];
  for (const q of v.queue) {
    if (q.type !== "local" || q.name.startsWith("SYSTEM.")) continue;
    const depth = (q.status && q.status.currentDepth) || 0;
    keep(q.name, depth);
    const tr = document.createElement("tr");
    tr.dataset.queue = q.name;
    const cell = (text, cls) => { const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; return td; };
    const handles = q.status ? q.status.openInputCount + "/" + q.status.openOutputCount : "";
    const st = q.status || {};
    const now = Date.now();
    const last = counts.get(q.name);
    let putRate = "", getRate = "";
    if (last && now > last.at && st.putCount !== undefined) {
      const secs = (now - last.at) / 1000;
      putRate = ((st.putCount - last.puts) / secs).toFixed(1);
      getRate = ((st.getCount - last.gets) / secs).toFixed(1);
    }
    if (putRate !== "") keepSample("rates", q.name, [Number(putRate), Number(getRate)]);
    if (st.putCount !== undefined) counts.set(q.name, { puts: st.putCount, gets: st.getCount, at: now });
    const act = document.createElement("td");
    const button = (text, what, fn) => {
      const b = document.createElement("button");
      b.type = "button"; b.textContent = text;
      b.setAttribute("aria-label", text + " " + what);
      b.addEventListener("click", fn);
      act.append(b);
    };
    button("Chart", q.name, () => { chartOf = q.name; chart(); });
    if (roles.includes("MQWebUser")) button("Browse", q.name, () => browse(q.name));
    if (roles.includes("MQWebAdmin")) {
      button("Clear", q.name, () => queueAction("clear", q.name));
      button("Delete", q.name, () => queueAction("delete", q.name));
    }
    const depthCell = cell(String(depth), "num depth");
    tr.append(cell(q.name), depthCell, cell(putRate, "num"), cell(getRate, "num"),
      cell(st.oldestMessageAge === undefined || st.oldestMessageAge === null ? "" : String(st.oldestMessageAge), "num age"),
      cell(handles, "num"),
      cell((q.attributes && q.attributes.descr) || ""), act);
    rows.push(tr);
    const o = document.createElement("option"); o.value = q.name;
    names.push(o);
  }
  $("queue-names").replaceChildren(...names);
  fill("queues", ...rows);
  if (!chartOf && rows.length) chartOf = rows[0].dataset.queue;
  chart();
}

// Samples kept in the browser across page loads, the last hour: [[ms, v1, v2...], ...] under
// sealmq.KIND.QM[.QUEUE] (depth, rates of a queue; the queue manager's protection cost).
const KEPT_MS = 3600 * 1000;
function kept(kind, what) {
  try { return JSON.parse(localStorage.getItem("sealmq." + kind + "." + qmgr + (what ? "." + what : ""))) || []; }
  catch (e) { return []; }
}
function keepSample(kind, what, values) {
  const now = Date.now();
  const h = kept(kind, what).filter((p) => now - p[0] <= KEPT_MS);
  h.push([now, ...values]);
  try { localStorage.setItem("sealmq." + kind + "." + qmgr + (what ? "." + what : ""), JSON.stringify(h)); } catch (e) { /* full */ }
}
function keep(queue, depth) { keepSample("depth", queue, [depth]); }

// A line chart of the last hour into element `id`: one line per series (`{label, color, i}`:
// the sample's value i), axes with the unit and time, a legend when there are several.
function lineChart(id, pts, series, unit, label) {
  const ns = "http://www.w3.org/2000/svg";
  const W = 640, H = 220, L = 56, B = 36, T = 12, R = 12;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  svg.setAttribute("role", "img");
  const vals = pts.flatMap((p) => series.map((s) => p[s.i] || 0));
  const top = Math.max(1, ...vals);
  const max = top >= 10 ? Math.ceil(top) : Math.ceil(top * 10) / 10;
  const now = Date.now();
  const x = (t) => L + ((W - L - R) * (KEPT_MS - (now - t))) / KEPT_MS;
  const y = (v) => H - B - ((H - B - T) * v) / max;
  const el = (name, attrs, text) => {
    const e = document.createElementNS(ns, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    svg.append(e);
    return e;
  };
  el("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#555" });
  el("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#555" });
  const tick = (v) => (max >= 10 ? String(Math.round(v)) : String(Math.round(v * 10) / 10));
  for (const v of [0, max / 2, max]) {
    el("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 12 }, tick(v));
    el("line", { x1: L, y1: y(v), x2: W - R, y2: y(v), stroke: "#ddd" });
  }
  for (const [mins, text] of [[60, "-60 min"], [30, "-30 min"], [0, "now"]]) {
    el("text", { x: x(now - mins * 60000), y: H - B + 16, "text-anchor": "middle", "font-size": 12 }, text);
  }
  el("text", { x: 14, y: (H - B) / 2, transform: "rotate(-90 14 " + (H - B) / 2 + ")", "text-anchor": "middle", "font-size": 12 }, unit);
  el("text", { x: (W + L) / 2, y: H - 4, "text-anchor": "middle", "font-size": 12 }, "time");
  series.forEach((s, n) => {
    if (pts.length) {
      el("polyline", { points: pts.map((p) => x(p[0]).toFixed(1) + "," + y(p[s.i] || 0).toFixed(1)).join(" "),
        fill: "none", stroke: s.color, "stroke-width": 2 });
    }
    if (series.length > 1) {
      el("line", { x1: L + 10 + n * 130, y1: T + 6, x2: L + 30 + n * 130, y2: T + 6, stroke: s.color, "stroke-width": 3 });
      el("text", { x: L + 34 + n * 130, y: T + 10, "font-size": 12 }, s.label);
    }
  });
  const last = pts.length ? pts[pts.length - 1] : null;
  svg.setAttribute("aria-label", label + " over the last hour: " + pts.length + " samples" +
    (last ? ", now " + series.map((s) => s.label + " " + tick(last[s.i] || 0)).join(", ") + " " + unit : ""));
  $(id).replaceChildren(svg);
}

let chartOf = null;
// The chosen queue's depth and its put and get rates over the last hour.
function chart() {
  if (!chartOf) return;
  lineChart("depth-chart", kept("depth", chartOf), [{ label: "depth", color: "#0b5394", i: 1 }],
    "messages", chartOf + " depth");
  $("depth-chart-title").textContent = "Depth of " + chartOf +
    " (messages; the last hour, sampled every 5 s, kept across page loads)";
  lineChart("rate-chart", kept("rates", chartOf), [{ label: "puts", color: "#0b5394", i: 1 },
    { label: "gets", color: "#b45f06", i: 2 }], "messages/s", chartOf + " put and get rates");
  $("rate-chart-title").textContent = "Puts and gets of " + chartOf +
    " (messages per second between samples; the last hour)";
}

// The queue manager's protection cost over the last hour: its protection and unprotection
// time per second of wall time (ms/s) and operations per second, between samples.
let protectionLast = null;
function protectionSample(ops) {
  let secs = 0, count = 0;
  for (const k of Object.keys(ops)) { secs += ops[k].seconds || 0; count += ops[k].count || 0; }
  const now = Date.now();
  if (protectionLast && now > protectionLast.at && protectionLast.qmgr === qmgr) {
    const wall = (now - protectionLast.at) / 1000;
    keepSample("protection", null, [Math.max(0, (secs - protectionLast.secs) * 1000 / wall),
      Math.max(0, (count - protectionLast.count) / wall)]);
  }
  protectionLast = { at: now, secs, count, qmgr };
  lineChart("protection-chart", kept("protection", null), [{ label: "ms/s", color: "#0b5394", i: 1 },
    { label: "operations/s", color: "#38761d", i: 2 }], "per second", "protection cost");
}

// CLEAR or DELETE of a queue, confirmed first; its error shown beside the queues.
async function queueAction(command, queue) {
  if (!window.confirm(command[0].toUpperCase() + command.slice(1) + " queue " + queue + "?")) return;
  try {
    const v = await json("POST", "/admin/action/qmgr/" + encodeURIComponent(qmgr) + "/mqsc", {
      type: "runCommandJSON", command, qualifier: "qlocal", name: queue,
    });
    const r = v.commandResponse[0] || {};
    sayAt("queues", v.overallCompletionCode === 0 ? "" : (r.message || []).join(" "));
  } catch (e) { sayAt("queues", e.message); }
  await refresh();
}

async function channels() {
  const v = await json("GET", base() + "/channel");
  let status = [];
  try { status = await display("chstatus", "*"); } catch (e) { /* no status: definitions only */ }
  const of = new Map(status.map((s) => [s.channel, s]));
  fill("channels", ...v.channel
    .filter((c) => !c.name.startsWith("SYSTEM."))
    .map((c) => {
      const s = of.get(c.name) || {};
      const partner = (c.attributes && c.attributes.conname) || s.conname || "";
      const tr = row([c.name, (c.attributes && c.attributes.chltype) || c.type, s.status || "INACTIVE", partner, s.msgs === undefined ? "" : s.msgs]);
      const act = document.createElement("td");
      if (roles.includes("MQWebAdmin")) {
        for (const [text, command, parameters] of [["Start", "start", {}], ["Stop", "stop", {}],
          ["Reset", "reset", {}], ["Resolve", "resolve", { action: "backout" }]]) {
          const b = document.createElement("button");
          b.type = "button"; b.textContent = text;
          b.setAttribute("aria-label", text + " channel " + c.name);
          b.addEventListener("click", () => channelAction(command, c.name, parameters));
          act.append(b);
        }
      }
      tr.append(act);
      return tr;
    }));
}

// START, STOP, RESET or RESOLVE of a channel; its answer or error beside the channels.
async function channelAction(command, channel, parameters) {
  if (command !== "start" && !window.confirm(command.toUpperCase() + " CHANNEL(" + channel + ")?")) return;
  try {
    const v = await json("POST", "/admin/action/qmgr/" + encodeURIComponent(qmgr) + "/mqsc", {
      type: "runCommandJSON", command, qualifier: "channel", name: channel, parameters,
    });
    const r = v.commandResponse[0] || {};
    sayAt("channels", (r.message || []).join(" "), v.overallCompletionCode === 0);
  } catch (e) { sayAt("channels", e.message); }
  await channels();
}

async function listeners() {
  let list = [], defs = [], services = [];
  try { list = await display("lsstatus", "*"); } catch (e) { /* none running */ }
  fill("listeners", ...list.map((l) =>
    row([l.listener, (l.ipaddr || "*") + ":" + l.port, (l.startda || "") + " " + (l.startti || "")])));
  try { defs = await display("listener", "*"); } catch (e) { /* none */ }
  fill("listener-defs", ...defs.filter((l) => !String(l.listener).startsWith("SYSTEM."))
    .map((l) => row([l.listener, l.control, (l.ipaddr || "*") + ":" + l.port, l.backlog, l.descr || ""])));
  try { services = await display("service", "*"); } catch (e) { /* none */ }
  fill("services", ...services.filter((x) => !String(x.service).startsWith("SYSTEM."))
    .map((x) => row([x.service, x.control, x.servtype, ((x.startcmd || "") + " " + (x.startarg || "")).trim(), x.descr || ""])));
}

async function pubsub() {
  let topics = [], subs = [];
  try { topics = await display("topic", "*"); } catch (e) { /* none */ }
  try { subs = await display("sub", "*"); } catch (e) { /* none */ }
  fill("topics", ...topics.filter((t) => !String(t.topic).startsWith("SYSTEM."))
    .map((t) => row([t.topic, t.topicstr, t.pub, t.sub, t.descr || ""])));
  fill("subscriptions", ...subs.filter((x) => !String(x.sub).startsWith("SYSTEM."))
    .map((x) => row([x.sub, x.topicstr, x.dest, x.subtype, x.durable, x.subuser])));
}

// Authority records (runCommand text: every record, as runmqsc lists them) and CHLAUTH.
async function security() {
  const v = await json("POST", "/admin/action/qmgr/" + encodeURIComponent(qmgr) + "/mqsc", {
    type: "runCommand", parameters: { command: "DISPLAY AUTHREC" },
  });
  const recs = (v.commandResponse || []).map((r) => attrsOf((r.text || []).slice(1).join(" ")))
    .filter((a) => a.PROFILE !== undefined);
  fill("authrecs", ...recs.map((a) => row([a.PROFILE, a.OBJTYPE, a.PRINCIPAL || a.GROUP || "", a.AUTHLIST || ""])));
  let rules = [];
  try { rules = await display("chlauth", "*"); } catch (e) { /* none */ }
  fill("chlauth", ...rules.map((r) => row([r.chlauth, r.type,
    r.address || r.userlist || r.sslpeer || r.clntuser || r.usersrc || "", r.usersrc || "", r.descr || ""])));
  let infos = [];
  try { infos = await display("authinfo", "*"); } catch (e) { /* none */ }
  fill("authinfo", ...infos.map((a) => row([a.authinfo, a.authtype, a.chcklocl || "", a.chckclnt || "",
    a.adoptctx || "", a.descr || ""])));
}

// KEYWORD(value) pairs of runmqsc's text.
function attrsOf(text) {
  const out = {};
  for (const m of text.matchAll(/([A-Z][A-Z0-9]*)\(([^)]*)\)/g)) out[m[1]] = m[2];
  return out;
}

async function connections() {
  const list = await display("conn", "*", { type: "CONN" });
  fill("connections", ...list
    .filter((c) => c.appltype !== "SYSTEM")
    .map((c) => row([c.conn, c.userid, c.appltag, c.channel || "", c.conname || "", c.handles])));
}

async function ha() {
  const h = (await json("GET", base() + "/ha")).ha;
  const summary = $("ha-summary");
  if (!h.replicated) {
    summary.textContent = "Not replicated: one instance.";
    $("ha").hidden = true;
    return;
  }
  $("ha").hidden = false;
  summary.textContent = "This instance: " + h.instance + " (" + h.role + "); active: " +
    (h.active || "none") + "; quorum " + (h.quorum || "unknown") + "; term " + h.term + ".";
  fill("ha", ...(h.instances || []).map((i) =>
    row([i.name, i.role, i.in_sync === undefined ? "unknown" : (i.in_sync ? "yes" : "no"),
      i.backlog === undefined ? "unknown" : i.backlog])));
}

async function errorLog() {
  const v = await json("GET", base() + "/errorlog?lines=20");
  $("errorlog").textContent = v.errorLog.join("\n");
}

// Replaces a table's rows; each cell is labelled with its column's heading, which a phone's
// narrow layout shows before the value (the headings themselves are hidden there).
function fill(id, ...rows) {
  const t = $(id);
  const heads = Array.from(t.tHead.rows[0].cells).map((c) => c.textContent.trim());
  for (const r of rows) {
    Array.from(r.cells).forEach((c, i) => { if (heads[i]) c.dataset.label = heads[i]; });
  }
  t.tBodies[0].replaceChildren(...rows);
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const t of cells) { const td = document.createElement("td"); td.textContent = String(t); tr.append(td); }
  return tr;
}

async function protection() {
  const p = (await json("GET", base() + "/protection")).protection;
  const ops = p.operations || {};
  fill("protection", ...Object.keys(ops).map((k) =>
    row([k, ops[k].count, ops[k].seconds.toFixed(3)])));
  protectionSample(ops);
  const facts = $("protection-facts");
  facts.replaceChildren();
  const reuse = p.keyReuse || {};
  for (const [k, v] of [["Key reuse (put hits/misses)", (reuse.putHits || 0) + "/" + (reuse.putMisses || 0)],
    ["Key reuse (get hits/misses)", (reuse.getHits || 0) + "/" + (reuse.getMisses || 0)],
    ["Protection error queue depth", p.errorQueueDepth]]) {
    const dt = document.createElement("dt"); dt.textContent = k;
    const dd = document.createElement("dd"); dd.textContent = v;
    facts.append(dt, dd);
  }
  const c = await json("GET", base() + "/certificate");
  fill("certificates", ...c.certificate.map((x) =>
    row([x.use, x.subject, x.daysToExpiry])));
  const pol = await json("GET", base() + "/policy");
  for (const x of pol.policy) policies.set(x.name, x.attributes || {});
  fill("policies", ...pol.policy.map((x) => {
    const a = x.attributes || {};
    const list = (v) => (Array.isArray(v) ? v.join("; ") : (v || ""));
    return row([x.name, a.signalg || "", a.encalg || "", list(a.recip), a.keyreuse === undefined ? "" : a.keyreuse]);
  }));
}

async function browse(queue) {
  sayAt("browse", "");
  $("browse-queue").value = queue;
  const base = "/messaging/qmgr/" + encodeURIComponent(qmgr) + "/queue/" + encodeURIComponent(queue);
  const l = await call("GET", base + "/messagelist?limit=20");
  if (!l.ok && l.status !== 404) {
    const v = await l.json().catch(() => ({}));
    sayAt("browse", (v.error && v.error[0].message) || ("HTTP " + l.status));
  }
  const listed = l.ok ? (await l.json()).messages : [];
  fill("browse-list", ...listed.map((m, i) => {
    const tr = row([m.messageId, m.putDateTime, m.messageLength, m.persistence, m.priority]);
    const td = document.createElement("td");
    const b = document.createElement("button");
    b.type = "button"; b.textContent = "Open";
    b.setAttribute("aria-label", "Open message " + (i + 1));
    b.addEventListener("click", () => openMessage(queue, m.messageId).catch((e) => sayAt("browse", e.message)));
    td.append(b); tr.append(td);
    return tr;
  }));
  const r = await call("GET", base + "/message");
  if (r.status === 204) { $("browse-out").textContent = queue + ": no message."; return; }
  if (!r.ok) { const v = await r.json(); sayAt("browse", v.error[0].message); return; }
  const lines = [queue + ": first message"];
  for (const [k, v] of r.headers) if (k.startsWith("ibm-mq-")) lines.push(k + ": " + v);
  const text = (r.headers.get("content-type") || "").startsWith("text/");
  const bytes = new Uint8Array(await r.arrayBuffer());
  lines.push("", text ? new TextDecoder().decode(bytes)
    : "(" + bytes.length + " bytes, not text: Open it below to see them in hexadecimal)");
  $("browse-out").textContent = lines.join("\n");
}

let opened = null; // the bytes of the message shown
// One message by its id (a browse: it stays): its descriptor, its payload as text or hex, and,
// when it is an envelope, that it is protected and who may read it.
async function openMessage(queue, id) {
  const base = "/messaging/qmgr/" + encodeURIComponent(qmgr) + "/queue/" + encodeURIComponent(queue);
  const r = await call("GET", base + "/message?messageId=" + encodeURIComponent(id));
  if (!r.ok) { const v = await r.json(); sayAt("browse", v.error[0].message); return; }
  opened = new Uint8Array(await r.arrayBuffer());
  // Bytes that are not text are shown in hexadecimal from the start.
  $("message-hex").checked = !(r.headers.get("content-type") || "").startsWith("text/");
  const md = $("message-md");
  md.replaceChildren();
  for (const [k, v] of r.headers) {
    if (!k.startsWith("ibm-mq-") && k !== "content-type") continue;
    const dt = document.createElement("dt"); dt.textContent = k;
    const dd = document.createElement("dd"); dd.textContent = v;
    md.append(dt, dd);
  }
  const magic = String.fromCharCode(...opened.slice(0, 4));
  const badge = $("message-badge");
  if (magic === "SMQE" || magic === "PDMQ") {
    const pol = policies.get(queue) || {};
    const list = (v) => (Array.isArray(v) ? v.join("; ") : (v || ""));
    badge.textContent = "Protected (" + (magic === "PDMQ" ? "IBM MQ AMS's envelope" : "sealmq's envelope") +
      "): policy " + queue + ", signed with " + (pol.signalg || "?") +
      (pol.encalg && pol.encalg !== "NONE" ? ", encrypted with " + pol.encalg + ", readable by " + (list(pol.recip) || "its recipients") : "") +
      (pol.signer ? "; signers " + list(pol.signer) : "") + ".";
    badge.hidden = false;
  } else {
    badge.hidden = true;
  }
  $("message-title").textContent = "Message " + id + " on " + queue + " (" + opened.length + " bytes)";
  $("message").hidden = false;
  showPayload();
}

function showPayload() {
  if (!opened) return;
  const hex = $("message-hex").checked;
  if (hex) {
    const lines = [];
    for (let i = 0; i < opened.length; i += 16) {
      const part = Array.from(opened.slice(i, i + 16));
      lines.push(i.toString(16).padStart(6, "0") + "  " +
        part.map((b) => b.toString(16).padStart(2, "0")).join(" ").padEnd(48) + "  " +
        part.map((b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join(""));
    }
    $("message-payload").textContent = lines.join("\n");
  } else {
    $("message-payload").textContent = new TextDecoder("utf-8", { fatal: false }).decode(opened);
  }
}

$("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  say("");
  const r = await fetch(API + "/login", {
    method: "POST", headers: { "Content-Type": "application/json" }, credentials: "same-origin",
    body: JSON.stringify({ username: $("username").value, password: $("password").value }),
  });
  $("password").value = "";
  if (r.status !== 204) { say("The user or password was not accepted."); return; }
  try { await start(); } catch (e) { say(e.message); }
});

$("logout").addEventListener("click", async () => {
  try { await call("DELETE", "/login"); } catch (e) { /* ended anyway */ }
  qmgr = null;
  showLogin();
});

$("put-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const q = $("put-queue").value.trim();
  const headers = { "Content-Type": "text/plain;charset=utf-8" };
  if ($("put-persistent").checked) headers["ibm-mq-md-persistence"] = "persistent";
  const r = await call("POST", "/messaging/qmgr/" + encodeURIComponent(qmgr) + "/queue/" +
    encodeURIComponent(q) + "/message", $("put-text").value, headers);
  if (r.status === 201) { sayAt("put", ""); $("status").textContent = "Put to " + q + "."; }
  else { const v = await r.json(); sayAt("put", v.error[0].message); }
  await refresh();
});

$("browse-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try { await browse($("browse-queue").value.trim()); } catch (e) { sayAt("browse", e.message); }
});

$("define-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try {
    const parameters = {};
    if ($("define-descr").value) parameters.descr = $("define-descr").value;
    const v = await json("POST", "/admin/action/qmgr/" + encodeURIComponent(qmgr) + "/mqsc", {
      type: "runCommandJSON", command: "define", qualifier: "qlocal",
      name: $("define-name").value, parameters,
    });
    sayAt("define", v.overallCompletionCode === 0 ? "" : v.commandResponse[0].message.join(" "));
    if (v.overallCompletionCode === 0) say("Defined.");
  } catch (e) { sayAt("define", e.message); }
  await refresh();
});

// ALTER through MQ's PATCH of the queue resource, in IBM's attribute objects.
$("alter-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const name = $("alter-name").value.trim();
  const body = {};
  if ($("alter-descr").value !== "") body.general = { description: $("alter-descr").value };
  if ($("alter-maxdepth").value !== "") body.storage = { maximumDepth: Number($("alter-maxdepth").value) };
  if (!Object.keys(body).length) { sayAt("alter", "Give a description or a maximum depth to change."); return; }
  try {
    await json("PATCH", base() + "/queue/" + encodeURIComponent(name), body);
    sayAt("alter", "Queue " + name + " altered.", true);
  } catch (e) { sayAt("alter", e.message); }
  await refresh();
});

$("mqsc-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const out = [];
  for (const command of $("mqsc-text").value.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("*"))) {
    out.push("> " + command);
    try {
      const v = await json("POST", "/admin/action/qmgr/" + encodeURIComponent(qmgr) + "/mqsc", {
        type: "runCommand", parameters: { command },
      });
      for (const r of v.commandResponse || []) out.push(...(r.text || []));
    } catch (e) { out.push(e.message); }
  }
  $("mqsc-out").textContent = out.join("\n");
});

$("qmgr-open-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try { await openQm($("qmgr-open").value.trim()); sayAt("qmgrs", ""); } catch (e) { sayAt("qmgrs", e.message); }
});

for (const b of document.querySelectorAll("#views button")) {
  b.addEventListener("click", () => showView(b.dataset.view));
}
$("message-hex").addEventListener("change", showPayload);

setInterval(() => { refresh().catch((e) => say(e.message)); }, 5000);
setInterval(() => { slow().catch((e) => say(e.message)); }, 15000);
setInterval(() => { if (installation && roles.includes("MQWebAdminRO")) qmgrList().catch((e) => sayAt("qmgrs", e.message)); }, 15000);
start().catch((e) => say(e.message));
