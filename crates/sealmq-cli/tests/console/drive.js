// Drives sealmq's web console in headless Chromium (Debian's, through playwright-core), as a
// user with a keyboard would: log in, find a queue, put a message through the form, watch the
// depth change, browse it. Prints one JSON line of what it saw; screenshots go to SHOTS.
//
//   PLAYWRIGHT=<dir with node_modules> BASE=https://127.0.0.1:PORT USER=.. PASSWORD=.. \
//   QUEUE=APP.Q SHOTS=<dir> node drive.js
"use strict";
const path = require("path");
const { chromium } = require(path.join(process.env.PLAYWRIGHT, "node_modules", "playwright-core"));

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const out = {};
  const errors = [];
  let page = null;
  try {
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1200, height: 900 } });
    page = await ctx.newPage();
    page.on("pageerror", (e) => errors.push(String(e)));
    // The console asks before it clears, deletes, stops or resets: the user says yes.
    page.on("dialog", (d) => d.accept());
    // Script errors count; a 401 the page expects (asking who is logged in before anyone is)
    // is logged by the browser as a failed load, and does not.
    page.on("console", (m) => {
      if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(m.text());
    });
    const rows = (sel) => page.$$eval(sel + " tbody tr", (rs) => rs.map((r) =>
      Array.from(r.cells).map((c) => c.textContent)));
    await page.goto(process.env.BASE + "/ibmmq/console/");
    await page.waitForSelector("#login-form");
    // Keyboard only: focus the first field, type, Tab, type, Enter.
    await page.focus("#username");
    await page.keyboard.type(process.env.USER);
    await page.keyboard.press("Tab");
    await page.keyboard.type(process.env.PASSWORD);
    await page.keyboard.press("Enter");
    const q = process.env.QUEUE;
    const depth = `tr[data-queue="${q}"] td.depth`;
    await page.waitForSelector(depth, { timeout: 15000 });
    out.title = await page.title();
    out.qmgr = await page.textContent("#qmgr-name");
    out.queues = await page.$$eval("#queues tbody tr", (rows) => rows.map((r) => r.dataset.queue));
    out.depth_before = await page.textContent(depth);
    await page.fill("#put-queue", q);
    await page.fill("#put-text", "put through the console form");
    await page.click("#put-form button[type=submit]");
    await page.waitForFunction((sel) => {
      const c = document.querySelector(sel);
      return c && c.textContent === "1";
    }, depth, { timeout: 15000 });
    out.depth_after = await page.textContent(depth);
    await page.click(`button[aria-label="Browse ${q}"]`);
    await page.waitForFunction(() => document.querySelector("#browse-out").textContent.includes("put through"),
      null, { timeout: 15000 });
    out.browse = await page.textContent("#browse-out");
    await page.waitForSelector("#browse-list tbody tr", { timeout: 15000 });
    out.browse_list = await page.$$eval("#browse-list tbody tr", (rs) => rs.map((r) =>
      Array.from(r.cells).map((c) => c.textContent)));
    await page.waitForSelector("#certificates tbody tr", { timeout: 15000 });
    out.protection = await page.$$eval("#protection tbody tr td:first-child", (c) => c.map((x) => x.textContent));
    out.certificates = await page.$$eval("#certificates tbody tr", (rows) => rows.map((r) => r.textContent));
    // The slower parts: connections, channel status, policies, HA, the error log.
    await page.waitForFunction(() => document.querySelector("#errorlog").textContent.length > 0
      && document.querySelectorAll("#connections tbody tr").length > 0
      && document.querySelectorAll("#policies tbody tr").length > 0,
    null, { timeout: 15000 });
    out.connections = await rows("#connections");
    out.channels = await rows("#channels");
    out.policies = await rows("#policies");
    out.queue_row = (await rows("#queues")).find((r) => r[0] === q);
    out.ha = await page.textContent("#ha-summary");
    out.errorlog = await page.textContent("#errorlog");
    await page.screenshot({ path: path.join(process.env.SHOTS, "console.png"), fullPage: true });
    // Opening a message: its descriptor, its payload as text, then in hexadecimal.
    await page.click('button[aria-label="Open message 1"]');
    await page.waitForSelector("#message:not([hidden])", { timeout: 15000 });
    out.message_text = await page.textContent("#message-payload");
    await page.check("#message-hex");
    out.message_hex = await page.textContent("#message-payload");
    out.message_md = await page.textContent("#message-md");
    // A protected message is marked so, with its policy and who may read it.
    if (process.env.PROTECTED_QUEUE) {
      await page.uncheck("#message-hex");
      await page.fill("#browse-queue", process.env.PROTECTED_QUEUE);
      await page.click("#browse-form button[type=submit]");
      await page.waitForSelector('#browse-list button[aria-label="Open message 1"]', { timeout: 15000 });
      await page.click('button[aria-label="Open message 1"]');
      await page.waitForFunction(() => !document.querySelector("#message-badge").hidden, null, { timeout: 15000 });
      out.badge = await page.textContent("#message-badge");
      out.protected_hex = await page.textContent("#message-payload");
      out.protected_preview = await page.textContent("#browse-out");
      await page.screenshot({ path: path.join(process.env.SHOTS, "console-message.png"), fullPage: false });
    }
    // The views: one at a time.
    await page.click('#views button[data-view="mqsc"]');
    out.queues_hidden_in_mqsc_view = await page.$eval("#queues", (t) => t.closest("section").hidden);
    await page.fill("#mqsc-text", "DISPLAY QLOCAL(APP.Q) CURDEPTH\nPING QMGR");
    await page.click("#mqsc-form button[type=submit]");
    await page.waitForFunction(() => document.querySelector("#mqsc-out").textContent.includes("AMQ8415I"),
      null, { timeout: 15000 });
    out.mqsc = await page.textContent("#mqsc-out");
    await page.screenshot({ path: path.join(process.env.SHOTS, "console-mqsc.png"), fullPage: false });
    await page.click('#views button[data-view="pubsub"]');
    await page.waitForSelector("#topics tbody tr", { timeout: 20000 });
    out.topics = await rows("#topics");
    out.subscriptions = await rows("#subscriptions");
    await page.click('#views button[data-view="security"]');
    await page.waitForSelector("#authrecs tbody tr", { timeout: 20000 });
    out.authrecs = await rows("#authrecs");
    out.chlauth = await rows("#chlauth");
    out.authinfo = await rows("#authinfo");
    await page.screenshot({ path: path.join(process.env.SHOTS, "console-security.png"), fullPage: false });
    // Channels: stop the sender (it retries toward a partner that is not there), see it so.
    await page.click('#views button[data-view="channels"]');
    await page.click('button[aria-label="Start channel TO.PARTNER"]');
    await page.waitForFunction(() => document.querySelector("#channels-err").textContent.includes("AMQ8018I"),
      null, { timeout: 15000 });
    out.channel_started = await page.textContent("#channels-err");
    await page.click('button[aria-label="Stop channel TO.PARTNER"]');
    await page.waitForFunction(() => document.querySelector("#channels-err").textContent.includes("AMQ8019I"),
      null, { timeout: 15000 });
    out.channel_stopped = await page.textContent("#channels-err");
    out.listeners = await rows("#listeners");
    out.listener_defs = await rows("#listener-defs");
    out.services = await rows("#services");
    await page.screenshot({ path: path.join(process.env.SHOTS, "console-channels.png"), fullPage: false });
    // Queues: a refused action's error appears beside the queues, where it was clicked.
    await page.click('#views button[data-view="queues"]');
    await page.click('button[aria-label="Delete APP.Q"]');
    await page.waitForFunction(() => document.querySelector("#queues-err").textContent.length > 0,
      null, { timeout: 15000 });
    out.delete_refused = await page.textContent("#queues-err");
    await page.click('button[aria-label="Clear APP.REPLY"]');
    // ALTER through the form: the new description shows in the queue's row.
    await page.fill("#alter-name", "APP.REPLY");
    await page.fill("#alter-descr", "replies out");
    await page.fill("#alter-maxdepth", "500");
    await page.click("#alter-form button[type=submit]");
    await page.waitForFunction(() => {
      const r = document.querySelector('tr[data-queue="APP.REPLY"]');
      return r && r.cells[6].textContent === "replies out";
    }, null, { timeout: 15000 });
    out.altered = await page.textContent("#alter-err");
    await page.click('button[aria-label="Chart APP.Q"]');
    await page.waitForFunction(() => document.querySelector("#depth-chart-title").textContent.includes("APP.Q"),
      null, { timeout: 15000 });
    out.chart_texts = await page.$$eval("#depth-chart svg text", (ts) => ts.map((t) => t.textContent));
    out.chart_kept = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("sealmq.depth.")).length);
    // Rates: put and get lines with a legend, from two samples 5 s apart.
    await page.waitForFunction(() => Object.keys(localStorage).some((k) => k.startsWith("sealmq.rates.")),
      null, { timeout: 20000 });
    out.rate_texts = await page.$$eval("#rate-chart svg text", (ts) => ts.map((t) => t.textContent));
    out.protection_texts = await page.$$eval("#protection-chart svg text", (ts) => ts.map((t) => t.textContent));
    // History kept across page loads.
    await page.reload();
    await page.waitForSelector("#queues tbody tr", { timeout: 15000 });
    out.chart_kept_after_reload = await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith("sealmq.depth.")).length);
    out.view_after_reload = await page.$eval('#views button[aria-pressed="true"]', (b) => b.dataset.view);
    await page.screenshot({ path: path.join(process.env.SHOTS, "console-queues.png"), fullPage: false });
    await page.click('#views button[data-view="all"]');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: path.join(process.env.SHOTS, "console-phone.png"), fullPage: true });
    out.phone_overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
    // A user with the messaging role only: the page keeps to messaging (no administrative
    // section), and a put and a browse by queue name work.
    if (process.env.MSG_USER) {
      await page.setViewportSize({ width: 1200, height: 900 });
      await page.click("#logout");
      await page.waitForSelector("#login-form", { state: "visible" });
      await page.fill("#username", process.env.MSG_USER);
      await page.fill("#password", process.env.MSG_PASSWORD);
      await page.press("#password", "Enter");
      await page.waitForFunction(() => document.querySelector("#who").textContent.includes("MQWebUser"),
        null, { timeout: 15000 });
      out.msg_who = await page.textContent("#who");
      out.msg_admin_hidden = await page.$$eval(".admin-only", (ss) => ss.every((x) => x.hidden));
      await page.fill("#put-queue", q);
      await page.fill("#put-text", "put by a messaging user");
      await page.click("#put-form button[type=submit]");
      await page.waitForFunction((qq) => document.querySelector("#status").textContent === "Put to " + qq + ".",
        q, { timeout: 15000 });
      await page.fill("#browse-queue", q);
      await page.click("#browse-form button[type=submit]");
      await page.waitForFunction(() => document.querySelectorAll("#browse-list tbody tr").length === 2,
        null, { timeout: 15000 });
      out.msg_browse_rows = await page.$$eval("#browse-list tbody tr", (rs) => rs.length);
    }
    out.errors = errors;
  } catch (e) {
    out.failure = String(e);
    // What the page showed, to tell why.
    if (page) {
      out.errors = errors;
      out.status = await page.textContent("#status").catch(() => null);
      out.who = await page.textContent("#who").catch(() => null);
      out.login_hidden = await page.$eval("#login-section", (s) => s.hidden).catch(() => null);
    }
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
})();
