// Drives the console of `sealmq web` (the installation's server) in headless Chromium: log
// in, see every queue manager with its state, start an ended one, open it and see its
// queues, stop it. Prints one JSON line of what it saw; a screenshot goes to SHOTS.
//
//   PLAYWRIGHT=<dir with node_modules> BASE=https://127.0.0.1:PORT USER=.. PASSWORD=.. \
//   ENDED=QB QUEUE=APP.Q SHOTS=<dir> node installation.js
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
  try {
    const ctx = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1200, height: 900 } });
    const page = await ctx.newPage();
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("dialog", (d) => d.accept());
    page.on("console", (m) => {
      if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(m.text());
    });
    const rows = () => page.$$eval("#qmgrs tbody tr", (rs) => rs.map((r) =>
      Array.from(r.cells).slice(0, 2).map((c) => c.textContent)));
    const state = (qm, want) => page.waitForFunction(([qm, want]) => {
      const r = document.querySelector(`#qmgrs tr[data-qmgr="${qm}"]`);
      return r && r.cells[1].textContent === want;
    }, [qm, want], { timeout: 60000 });
    await page.goto(process.env.BASE + "/ibmmq/console/");
    await page.waitForSelector("#login-form");
    await page.fill("#username", process.env.USER);
    await page.fill("#password", process.env.PASSWORD);
    await page.press("#password", "Enter");
    await page.waitForSelector("#qmgrs tbody tr", { timeout: 15000 });
    out.before = await rows();
    out.opened_first = await page.textContent("#qmgr-name");
    const qm = process.env.ENDED;
    await page.click(`button[aria-label="Start ${qm}"]`);
    await state(qm, "running");
    out.started_says = await page.textContent("#qmgrs-err");
    await page.click(`button[aria-label="Open ${qm}"]`);
    await page.waitForSelector(`tr[data-queue="${process.env.QUEUE}"]`, { timeout: 15000 });
    out.opened = await page.textContent("#qmgr-name");
    out.queues = await page.$$eval("#queues tbody tr", (rs) => rs.map((r) => r.dataset.queue));
    await page.screenshot({ path: path.join(process.env.SHOTS, "console-installation.png"), fullPage: false });
    await page.click(`button[aria-label="Stop ${qm}"]`);
    await state(qm, "ended");
    out.after = await rows();
    out.opened_after_stop = await page.textContent("#qmgr-name");
  } catch (e) {
    out.failure = String(e && e.stack || e);
  } finally {
    out.errors = errors;
    await browser.close();
    process.stdout.write(JSON.stringify(out) + "\n");
  }
})();
