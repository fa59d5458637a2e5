#!/usr/bin/env node
// copilotkit.js: runs cases through the published CopilotKit 1.75, headless,
// as a CopilotKit app does: the runtime (@copilotkit/runtime/v2, its node
// listener on a local port) with an HttpAgent pointed at the case's URL (the
// relay), and in front of it what a browser runs, @copilotkit/core's
// CopilotKitCore with a ProxiedCopilotRuntimeAgent.
//
//   node copilotkit.js < cases.json
//
// cases.json: as for runner.js, [{name, url, agent: {threadId, initialMessages},
// params: {runId, tools, context, forwardedProps}, timeoutMs}]. Prints one
// JSON line per case, as runner.js does: {name, resolved, error, messages,
// state, runErrors, warnings, sent (the bodies the runtime's HttpAgent sent
// to the case's URL), startedAt, endedAt}.
"use strict";

process.env.COPILOTKIT_TELEMETRY_DISABLED = "true"; // no network but the loopback
process.env.DO_NOT_TRACK = "1";

const fs = require("fs");
const http = require("http");
const path = require("path");

const { CopilotRuntime } = require("@copilotkit/runtime/v2");
const { createCopilotNodeListener } = require("@copilotkit/runtime/v2/node");
const { CopilotKitCore, ProxiedCopilotRuntimeAgent } = require("@copilotkit/core");
// The HttpAgent the runtime's own release brings (@ag-ui/client 0.0.59).
const runtimeDir = path.dirname(require.resolve("@copilotkit/runtime/package.json"));
const { HttpAgent } = require(require.resolve("@ag-ui/client", { paths: [runtimeDir] }));

const cases = JSON.parse(fs.readFileSync(0, "utf8"));

let captured = [];
for (const level of ["warn", "error", "log", "info", "debug"]) {
  console[level] = (...args) => captured.push({ level, text: args.map(fmt).join(" ") });
}
function fmt(a) {
  if (typeof a === "string") return a;
  if (a instanceof Error) return `${a.name}: ${a.message}`;
  try { return JSON.stringify(a); } catch { return String(a); }
}
function clip(s, n = 1500) {
  return s.length > n ? s.slice(0, n) + `…(${s.length - n} more)` : s;
}

// The bodies sent to the relay, by wrapping the fetch the runtime's HttpAgent
// calls (the browser side's requests go to the runtime, not counted).
const realFetch = globalThis.fetch;
let relayURL = null;
let sent = [];
globalThis.fetch = async (url, init) => {
  if (relayURL && String(url).startsWith(relayURL) && init && typeof init.body === "string") sent.push(init.body);
  return realFetch(url, init);
};

async function runCase(c) {
  captured = [];
  sent = [];
  relayURL = c.url;
  const runtime = new CopilotRuntime({ agents: { default: new HttpAgent({ url: c.url }) } });
  const listener = createCopilotNodeListener({ runtime, basePath: "/api/copilotkit", activateChannels: false });
  const server = http.createServer(listener);
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const runtimeUrl = `http://127.0.0.1:${server.address().port}/api/copilotkit`;

  const core = new CopilotKitCore({ runtimeUrl, deferInitialConnection: true });
  const agent = new ProxiedCopilotRuntimeAgent({ runtimeUrl, agentId: "default" });
  agent.threadId = c.agent.threadId;
  agent.setMessages(c.agent.initialMessages || []);
  const runErrors = [];
  const sub = agent.subscribe({
    onRunErrorEvent: ({ event }) => {
      runErrors.push({ message: event.message, ...(event.code !== undefined && { code: event.code }) });
    },
  });
  const out = { name: c.name, startedAt: Date.now() };
  let timer;
  try {
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`copilotkit.js timeout after ${c.timeoutMs || 20000}ms`)), c.timeoutMs || 20000);
    });
    const p = c.params || {};
    // What a browser does: the core runs the proxied agent against the runtime.
    agent.tools = p.tools;
    const res = await Promise.race([core.runAgent({ agent, runId: p.runId, forwardedProps: p.forwardedProps }), timeout]);
    out.resolved = true;
    out.result = res && res.result;
  } catch (e) {
    out.resolved = false;
    out.error = clip(e && e.message ? e.message : String(e), 4000);
  } finally {
    clearTimeout(timer);
    sub.unsubscribe();
  }
  out.endedAt = Date.now();
  out.runErrors = runErrors;
  out.sent = sent;
  out.messages = agent.messages;
  out.state = agent.state;
  if ("pendingInterrupts" in agent) out.pendingInterrupts = agent.pendingInterrupts;
  out.warnings = captured.map((w) => ({ level: w.level, text: clip(w.text) }));
  await new Promise((resolve) => server.close(resolve));
  server.closeAllConnections?.();
  return out;
}

(async () => {
  for (const c of cases) {
    process.stdout.write(JSON.stringify(await runCase(c)) + "\n");
  }
  process.exit(0);
})().catch((e) => {
  process.stderr.write(`copilotkit.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
