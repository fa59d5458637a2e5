#!/usr/bin/env node
// runner.js: runs a list of cases with ONE published @ag-ui/client release,
// sequentially, in one process (node start-up is the expensive part).
//
//   node runner.js <client-version> [cases.json]      (cases read from stdin when no file)
//
// cases.json: [{ "name", "url", "agent": {threadId, initialMessages, initialState, headers},
//               "params": {runId, tools, context, forwardedProps, resume},
//               "captureRaw": bool, "validateRaw": "1.0.0", "timeoutMs": n }]
//
// Prints one JSON line per case: {name, resolved, error, messages, state, result,
// pendingInterrupts, runErrors:[{message,code}], newMessages, warnings:[{level,text}], sent:[request bodies as sent],
// startedAt/endedAt (ms since the epoch, to attribute relay log lines), raw?, rawInvalid?}.
// The client is the npm alias "client-<version>" from package.json; every version
// ships CommonJS (dist/index.js), which is what is required here.
"use strict";

const fs = require("fs");
const path = require("path");

const version = process.argv[2];
if (!version) {
  process.stderr.write("usage: runner.js <client-version> [cases.json]\n");
  process.exit(2);
}
const client = require(`client-${version}`);
const casesText = process.argv[3] ? fs.readFileSync(process.argv[3], "utf8") : fs.readFileSync(0, "utf8");
const cases = JSON.parse(casesText);

// Every line the client writes to the console is evidence: capture it per case.
let captured = [];
for (const level of ["warn", "error", "log", "info", "debug"]) {
  console[level] = (...args) => {
    captured.push({ level, text: args.map(fmt).join(" ") });
  };
}
function fmt(a) {
  if (typeof a === "string") return a;
  if (a instanceof Error) return `${a.name}: ${a.message}`;
  try { return JSON.stringify(a); } catch { return String(a); }
}

// The raw bytes the client received, by wrapping the global fetch every release calls.
const realFetch = globalThis.fetch;
let rawTexts = null;
let sentBodies = [];
globalThis.fetch = async (url, init) => {
  if (init && typeof init.body === "string") sentBodies.push(init.body);
  const res = await realFetch(url, init);
  if (rawTexts) {
    const copy = res.clone();
    rawTexts.push(copy.text().catch((e) => `<<read error: ${e.message}>>`));
  }
  return res;
};

let eventSchemas = null;
function validateEvents(frames, coreVersion) {
  if (!eventSchemas) eventSchemas = require(`core-${coreVersion}/schemas`).EventSchemas;
  const invalid = [];
  frames.forEach((ev, i) => {
    const r = eventSchemas.safeParse(ev);
    if (!r.success) invalid.push({ index: i, type: ev && ev.type, issues: r.error.issues.slice(0, 5) });
  });
  return invalid;
}

function parseFrames(text) {
  const out = [];
  for (const block of text.split("\n\n")) {
    const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, ""));
    if (data.length === 0) continue;
    try { out.push(JSON.parse(data.join("\n"))); } catch (e) { out.push({ __unparseable: data.join("\n") }); }
  }
  return out;
}

function clip(s, n = 4000) {
  return s.length > n ? s.slice(0, n) + `…(${s.length - n} more)` : s;
}

async function runCase(c) {
  captured = [];
  sentBodies = [];
  rawTexts = c.captureRaw ? [] : null;
  const agent = new client.HttpAgent({ url: c.url, ...(c.agent || {}) });
  const out = { name: c.name, startedAt: Date.now() };
  const runErrors = [];
  let timer;
  try {
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => {
        try { agent.abortRun(); } catch {}
        reject(new Error(`runner timeout after ${c.timeoutMs || 20000}ms`));
      }, c.timeoutMs || 20000);
    });
    // RUN_ERROR is not an exception (the run resolves): record what the
    // consumer was told
    const subscriber = {
      onRunErrorEvent: ({ event }) => {
        runErrors.push({ message: event.message, ...(event.code !== undefined && { code: event.code }) });
      },
    };
    const res = await Promise.race([agent.runAgent(c.params || {}, subscriber), timeout]);
    out.resolved = true;
    out.result = res && res.result;
    out.newMessages = res && res.newMessages;
  } catch (e) {
    out.resolved = false;
    out.error = clip(e && e.message ? e.message : String(e));
    if (e && e.status) out.httpStatus = e.status;
  } finally {
    clearTimeout(timer);
  }
  out.endedAt = Date.now();
  out.runErrors = runErrors;
  out.sent = sentBodies;
  out.messages = agent.messages;
  out.state = agent.state;
  if ("pendingInterrupts" in agent) out.pendingInterrupts = agent.pendingInterrupts;
  out.warnings = captured.map((w) => ({ level: w.level, text: clip(w.text, 1500) }));
  if (rawTexts) {
    const texts = await Promise.all(rawTexts);
    out.raw = texts.flatMap(parseFrames);
    if (c.validateRaw) out.rawInvalid = validateEvents(out.raw, c.validateRaw);
  }
  rawTexts = null;
  return out;
}

(async () => {
  for (const c of cases) {
    const out = await runCase(c);
    process.stdout.write(JSON.stringify(out) + "\n");
  }
})().catch((e) => {
  process.stderr.write(`runner: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
