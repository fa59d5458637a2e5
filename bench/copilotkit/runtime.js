#!/usr/bin/env node
// runtime.js: the published CopilotKit 1.75 runtime as the bench runs it,
// a proxy between the bench's consumers and the synthetic producer, as a
// CopilotKit app deploys it: @copilotkit/runtime/v2's CopilotRuntime with
// one HttpAgent (the @ag-ui/client release the runtime brings, 0.0.59)
// pointed at the producer, served by its node listener. Every event is
// parsed by the HttpAgent, passed through the runtime's runner (the default
// in-memory one) and encoded again as SSE.
//
//   node runtime.js LISTEN UPSTREAM     # e.g. 127.0.0.1:8090 127.0.0.1:8080
//
// A run is POST http://LISTEN/api/copilotkit/agent/default/run with a
// RunAgentInput; the HttpAgent posts it on to http://UPSTREAM/run. The
// runtime's agent URL is fixed, so the bench carries its run parameters in
// forwardedProps (which the runtime forwards untouched): see synth's
// producer.
"use strict";

process.env.COPILOTKIT_TELEMETRY_DISABLED = "true"; // no network but the loopback
process.env.DO_NOT_TRACK = "1";

const http = require("http");
const path = require("path");

const { CopilotRuntime } = require("@copilotkit/runtime/v2");
const { createCopilotNodeListener } = require("@copilotkit/runtime/v2/node");
const runtimeDir = path.dirname(require.resolve("@copilotkit/runtime/package.json"));
const { HttpAgent } = require(require.resolve("@ag-ui/client", { paths: [runtimeDir] }));

const [listen, upstream] = process.argv.slice(2);
if (!listen || !upstream) {
  process.stderr.write("usage: node runtime.js LISTEN UPSTREAM\n");
  process.exit(2);
}
const [host, port] = [listen.slice(0, listen.lastIndexOf(":")), Number(listen.slice(listen.lastIndexOf(":") + 1))];

const runtime = new CopilotRuntime({ agents: { default: new HttpAgent({ url: `http://${upstream}/run` }) } });
const listener = createCopilotNodeListener({ runtime, basePath: "/api/copilotkit", activateChannels: false });
const server = http.createServer(listener);
server.keepAliveTimeout = 120000;
server.headersTimeout = 0;
server.requestTimeout = 0;
server.timeout = 0;
server.maxConnections = Infinity;
server.listen({ host, port, backlog: 4096 }, () => {
  process.stderr.write(`runtime.js: listening on ${listen}, agent at http://${upstream}/run\n`);
});
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => {
    server.close();
    server.closeAllConnections?.();
    process.exit(0);
  });
}
