// The browser test's page: runs one scenario with a published
// @ag-ui/client release (HttpAgent in the page, calling the relay on
// another origin), writes what happened to the page's log as it happens,
// and leaves its report in window.__report for the driver.
//
// Query parameters:
//   scenario  a name, shown in the log
//   mode      "run" (HttpAgent.runAgent) or "fetch" (a plain fetch of a
//             malformed input, to read the relay's problem answer)
//   client    "1.0.0" or "0.0.59" (mode run)
//   url       the relay's URL of the run
//   run       the runId to send (the producer holds the stream on it)
//   seen      a URL on the page's own origin, fetched once the first event
//             has arrived (the producer sends the rest after it)
import * as client100 from "client-1.0.0";
import * as client0059 from "client-0.0.59";

const clients = { "1.0.0": client100, "0.0.59": client0059 };
const params = new URLSearchParams(location.search);
const t0 = performance.timeOrigin + performance.now();
const logEl = document.getElementById("log");
const report = { scenario: params.get("scenario"), log: [] };

// now is the wall clock in ms, with sub-ms precision, so that arrival
// times compare with the producer's (same machine, same clock).
function now() {
  return performance.timeOrigin + performance.now();
}

function log(text, cls) {
  const line = `+${(now() - t0).toFixed(1).padStart(8)}ms  ${text}`;
  report.log.push(line);
  const span = document.createElement("span");
  if (cls) span.className = cls;
  span.textContent = line + "\n";
  logEl.appendChild(span);
}

// The client's console lines are evidence (1.0 warns when it strips or drops).
report.console = [];
for (const level of ["warn", "error"]) {
  const orig = console[level].bind(console);
  console[level] = (...args) => {
    const text = args.map((a) => (a instanceof Error ? `${a.name}: ${a.message}` : typeof a === "string" ? a : safeJSON(a))).join(" ");
    report.console.push({ level, text });
    log(`console.${level}: ${text}`, "error");
    orig(...args);
  };
}

function safeJSON(v) {
  try { return JSON.stringify(v); } catch { return String(v); }
}

// The raw frames as they come off the wire: fetch is wrapped (every
// release calls the global fetch) and the answer's body teed, so arrival
// is timed before the client's own processing.
report.frames = [];
let signalled = false;
function signalFirst() {
  if (signalled || !params.get("seen")) return;
  signalled = true;
  log("first event arrived: telling the producer to send the rest");
  realFetch(params.get("seen"), { method: "POST" }).catch((e) => log(`signal failed: ${e}`, "error"));
}

const realFetch = window.fetch.bind(window);
window.fetch = async (input, init) => {
  const res = await realFetch(input, init);
  report.status = res.status;
  log(`answer ${res.status} ${res.headers.get("content-type") || ""}`);
  if (res.ok && res.body) readFrames(res.clone().body);
  return res;
};

async function readFrames(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const at = now();
    buf += decoder.decode(value, { stream: true });
    const blocks = buf.split("\n\n");
    buf = blocks.pop();
    for (const block of blocks) {
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, "")).join("\n");
      if (!data && block.split("\n").some((l) => l.startsWith(":"))) {
        report.comments = (report.comments || 0) + 1; // a keep-alive
        log("wire  comment");
      }
      if (!data) continue;
      let event;
      try { event = JSON.parse(data); } catch { event = { type: "<unparseable>", data }; }
      report.frames.push({ at, event });
      log(`wire  ${event.type}`);
      signalFirst();
    }
  }
}

async function runAgent() {
  const c = clients[params.get("client")];
  if (!c) throw new Error(`no client ${params.get("client")}`);
  const agent = new c.HttpAgent({ url: params.get("url"), threadId: `thread-${params.get("run")}` });
  report.events = [];
  try {
    const res = await agent.runAgent({ runId: params.get("run") }, {
      onEvent: ({ event }) => {
        report.events.push({ at: now(), type: event.type });
        log(`event ${event.type}`);
      },
      onRunErrorEvent: ({ event }) => log(`RUN_ERROR ${event.code || ""}: ${event.message}`, "error"),
    });
    report.resolved = true;
    report.result = res && res.result;
  } catch (e) {
    report.resolved = false;
    report.error = e && e.message ? e.message : String(e);
    log(`runAgent rejected: ${report.error}`, "error");
  }
  report.messages = JSON.parse(JSON.stringify(agent.messages));
}

async function fetchProblem() {
  try {
    const res = await realFetch(params.get("url"), {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ threadId: "thread-problem", runId: params.get("run"), messages: "not a list", protocolVersion: "1.0" }),
    });
    report.status = res.status;
    report.contentType = res.headers.get("content-type");
    report.body = await res.text();
    log(`answer ${res.status} ${report.contentType}: ${report.body}`);
  } catch (e) {
    report.fetchError = `${e.name}: ${e.message}`;
    log(`fetch failed: ${report.fetchError}`, "error");
  }
}

(async () => {
  document.getElementById("title").textContent = `agui-relay browser test: ${report.scenario} (${params.get("mode")} ${params.get("client") || ""})`;
  log(`page origin ${location.origin}, relay ${params.get("url")}`);
  try {
    if (params.get("mode") === "fetch") await fetchProblem();
    else await runAgent();
  } catch (e) {
    report.pageError = String(e && e.stack ? e.stack : e);
    log(`page error: ${report.pageError}`, "error");
  }
  log("done");
  window.__report = report;
})();
