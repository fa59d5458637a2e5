#!/usr/bin/env node
// drive.js: drives Debian's Chromium (headless, through playwright-core)
// for the browser test. One browser for the whole test; one context (its
// own cache, so its own preflights) per page. Commands are JSON lines on
// stdin, answers JSON lines on stdout, one per command, in order:
//
//   {"cmd":"open","name":N,"url":U,"timeoutMs":T}
//       loads U in a new context and waits until the page has left its
//       report (window.__report); answers {name, report, requests} or
//       {name, error, log} when it does not within T ms
//   {"cmd":"shot","name":N,"path":P}   full-page screenshot of page N at P
//   {"cmd":"close","name":N}           closes page N's context
//
// requests are the page's requests as Chromium's DevTools protocol reports
// them: CORS preflights too, which the page itself cannot see, and every
// answer's headers, of which the page can read only the exposed ones.
"use strict";

const readline = require("readline");
const { chromium } = require("playwright-core");

const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";

async function main() {
  const browser = await chromium.launch({
    executablePath,
    headless: true,
    // The machine's network is closed: Chromium's own background traffic
    // (updates, sync, safe browsing) would only fail.
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
  const pages = new Map();
  const out = (v) => process.stdout.write(JSON.stringify(v) + "\n");
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (!line.trim()) continue;
    const c = JSON.parse(line);
    try {
      if (c.cmd === "open") out(await open(browser, pages, c));
      else if (c.cmd === "shot") {
        const p = pages.get(c.name);
        if (!p) throw new Error(`no page ${c.name}`);
        await p.page.screenshot({ path: c.path, fullPage: true });
        out({ name: c.name, path: c.path });
      } else if (c.cmd === "close") {
        const p = pages.get(c.name);
        if (p) await p.context.close();
        pages.delete(c.name);
        out({ name: c.name, closed: true });
      } else throw new Error(`unknown command ${c.cmd}`);
    } catch (e) {
      out({ name: c.name, error: String(e && e.message ? e.message : e) });
    }
  }
  await browser.close();
}

async function open(browser, pages, c) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 700 } });
  const page = await context.newPage();
  pages.set(c.name, { context, page });
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") pageErrors.push(`console: ${m.text()}`); });

  // Every request as DevTools reports it, preflights included (a request
  // of type Preflight, which the page itself cannot see), with the answer's
  // status and headers (which the page can read only when exposed).
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  const requests = new Map();
  cdp.on("Network.requestWillBeSent", (e) => {
    requests.set(e.requestId, { url: e.request.url, method: e.request.method, type: e.type });
  });
  cdp.on("Network.responseReceived", (e) => {
    const r = requests.get(e.requestId);
    if (r) {
      r.status = e.response.status;
      r.headers = e.response.headers;
    }
  });

  await page.goto(c.url);
  try {
    await page.waitForFunction(() => window.__report !== undefined, null, { timeout: c.timeoutMs || 30000 });
  } catch (e) {
    const log = await page.evaluate(() => document.getElementById("log").textContent).catch(() => "");
    return { name: c.name, error: `no report within ${c.timeoutMs || 30000}ms`, log, pageErrors };
  }
  const report = await page.evaluate(() => window.__report);
  return { name: c.name, report, requests: [...requests.values()], pageErrors };
}

main().catch((e) => {
  process.stderr.write(`drive.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
