// sealmq's web console: a page over the REST API (docs/rest.md), no framework, no build step.
// It logs in with POST /login (the session cookie), then reads /admin and /messaging.
"use strict";

const API = "/ibmmq/rest/v2";
const CSRF = { "ibm-mq-rest-csrf-token": "console" };
let qmgr = null;
let roles = [];
const history = new Map(); // queue -> recent depths
const counts = new Map(); // queue -> {puts, gets, at}: the last sample, for rates
const $ = (id) => document.getElementById(id);

function say(text) { $("status").textContent = text || ""; }

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
  $("define-section").hidden = !roles.includes("MQWebAdmin");
  $("put-section").hidden = !roles.includes("MQWebUser");
  $("browse-section").hidden = !roles.includes("MQWebUser");
  // Without the read-only role only messaging is open to the user: the page keeps to it.
  const admin = roles.includes("MQWebAdminRO");
  for (const s of document.querySelectorAll(".admin-only")) s.hidden = !admin;
  qmgr = u.queueManager;
  $("qmgr-name").textContent = qmgr;
  if (!admin) return;
  const q = await json("GET", "/admin/qmgr");
  const facts = $("qm-facts");
  facts.replaceChildren();
  for (const [k, v] of [["Name", qmgr], ["State", q.qmgr[0].state],
    ["Started", new Date(q.qmgr[0].started * 1000).toISOString()]]) {
    const dt = document.createElement("dt"); dt.textContent = k;
    const dd = document.createElement("dd"); dd.textContent = v;
    facts.append(dt, dd);
  }
  await refresh();
  await protection();
  await slow();
}

// What changes less often than depths: connections, channel status, HA, the error log.
async function slow() {
  if (!qmgr || !roles.includes("MQWebAdminRO")) return;
  await connections();
  await channels();
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

function spark(values) {
  const w = 120, h = 24, max = Math.max(1, ...values);
  const pts = values.map((v, i) =>
    (values.length < 2 ? 0 : (i * w) / (values.length - 1)).toFixed(1) + "," +
    (h - (v * (h - 2)) / max - 1).toFixed(1)).join(" ");
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", w); svg.setAttribute("height", h);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "depth samples: " + values.join(", "));
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", pts); line.setAttribute("fill", "none");
  line.setAttribute("stroke", "#0b5394"); line.setAttribute("stroke-width", "2");
  svg.append(line);
  return svg;
}

async function refresh() {
  if (!qmgr || !roles.includes("MQWebAdminRO")) return;
  const v = await json("GET", "/admin/qmgr/" + encodeURIComponent(qmgr) + "/queue");
  const rows = [];
  const names = [];
  for (const q of v.queue) {
    if (q.type !== "local" || q.name.startsWith("SYSTEM.")) continue;
    const depth = (q.status && q.status.currentDepth) || 0;
    const h = history.get(q.name) || [];
    h.push(depth); if (h.length > 60) h.shift();
    history.set(q.name, h);
    const tr = document.createElement("tr");
    tr.dataset.queue = q.name;
    const cell = (text, cls) => { const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; return td; };
    const sparkCell = document.createElement("td"); sparkCell.append(spark(h));
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
    if (st.putCount !== undefined) counts.set(q.name, { puts: st.putCount, gets: st.getCount, at: now });
    const act = document.createElement("td");
    if (roles.includes("MQWebUser")) {
      const b = document.createElement("button");
      b.type = "button"; b.textContent = "Browse";
      b.setAttribute("aria-label", "Browse " + q.name);
      b.addEventListener("click", () => browse(q.name));
      act.append(b);
    }
    const depthCell = cell(String(depth), "num depth");
    tr.append(cell(q.name), depthCell, sparkCell, cell(putRate, "num"), cell(getRate, "num"),
      cell(st.oldestMessageAge === undefined || st.oldestMessageAge === null ? "" : String(st.oldestMessageAge), "num age"),
      cell(handles, "num"),
      cell((q.attributes && q.attributes.descr) || ""), act);
    rows.push(tr);
    const o = document.createElement("option"); o.value = q.name;
    names.push(o);
  }
  $("queue-names").replaceChildren(...names);
  fill("queues", ...rows);
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
      return row([c.name, c.type, s.status || "INACTIVE", partner, s.msgs === undefined ? "" : s.msgs]);
    }));
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
  fill("policies", ...pol.policy.map((x) => {
    const a = x.attributes || {};
    const list = (v) => (Array.isArray(v) ? v.join("; ") : (v || ""));
    return row([x.name, a.signalg || "", a.encalg || "", list(a.recip), a.keyreuse === undefined ? "" : a.keyreuse]);
  }));
}

async function browse(queue) {
  const base = "/messaging/qmgr/" + encodeURIComponent(qmgr) + "/queue/" + encodeURIComponent(queue);
  const l = await call("GET", base + "/messagelist?limit=20");
  const listed = l.ok ? (await l.json()).messages : [];
  fill("browse-list", ...listed.map((m) =>
    row([m.messageId, m.putDateTime, m.messageLength, m.persistence, m.priority])));
  const r = await call("GET", base + "/message");
  if (r.status === 204) { $("browse-out").textContent = queue + ": no message."; return; }
  if (!r.ok) { const v = await r.json(); say(v.error[0].message); return; }
  const lines = [queue + ": first message"];
  for (const [k, v] of r.headers) if (k.startsWith("ibm-mq-")) lines.push(k + ": " + v);
  lines.push("", await r.text());
  $("browse-out").textContent = lines.join("\n");
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
  if (r.status === 201) { say(""); $("status").textContent = "Put to " + q + "."; }
  else { const v = await r.json(); say(v.error[0].message); }
  await refresh();
});

$("browse-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try { await browse($("browse-queue").value.trim()); } catch (e) { say(e.message); }
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
    say(v.overallCompletionCode === 0 ? "Defined." : v.commandResponse[0].message.join(" "));
  } catch (e) { say(e.message); }
  await refresh();
});

setInterval(() => { refresh().catch((e) => say(e.message)); }, 5000);
setInterval(() => { slow().catch((e) => say(e.message)); }, 15000);
start().catch((e) => say(e.message));
