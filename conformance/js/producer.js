#!/usr/bin/env node
// producer.js: an AG-UI producer written on a published @ag-ui/encoder, the
// way a TypeScript agent writes its answer: an EventEncoder made from the
// request's Accept header, its content type, each event encoded by it.
//
//   node producer.js <encoder-alias>        (encoder-1.0.0, encoder-0.0.45: package.json)
//
// Prints one line, {"url": "http://127.0.0.1:<port>"}, once it listens.
//   POST /s/<name>   answers with the events of testdata/streams/<name>.sse,
//                    each encoded by the encoder (SSE, or protobuf when the
//                    Accept header allows it: the encoder's choice, not ours)
//   GET /_requests   what it received so far: [{uri, accept, body}]
"use strict";

const fs = require("fs");
const http = require("http");
const path = require("path");

const alias = process.argv[2];
if (!alias) {
  process.stderr.write("usage: producer.js <encoder-alias>\n");
  process.exit(2);
}
const { EventEncoder } = require(alias);
const streams = path.join(__dirname, "..", "..", "testdata", "streams");

// events reads a recorded stream: the JSON of each frame's data lines.
function events(name) {
  const text = fs.readFileSync(path.join(streams, name + ".sse"), "utf8");
  const out = [];
  for (const block of text.split("\n\n")) {
    const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, ""));
    if (data.length > 0) out.push(JSON.parse(data.join("\n")));
  }
  return out;
}

const received = [];
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const url = new URL(req.url, "http://x");
    if (req.method === "GET" && url.pathname === "/_requests") {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify(received));
      return;
    }
    received.push({ uri: req.url, accept: req.headers.accept ?? null, body: Buffer.concat(chunks).toString("utf8") });
    const name = url.pathname.startsWith("/s/") ? url.pathname.slice(3) : "";
    let evs;
    try {
      if (!/^[\w.@-]+(\/[\w.@-]+)*$/.test(name) || name.includes("..")) throw new Error("bad name");
      evs = events(name);
    } catch (e) {
      res.writeHead(404, { "Content-Type": "text/plain" });
      res.end(`no stream ${name}: ${e.message}\n`);
      return;
    }
    const encoder = new EventEncoder({ accept: req.headers.accept });
    res.writeHead(200, { "Content-Type": encoder.getContentType(), "Cache-Control": "no-cache" });
    for (const ev of evs) res.write(encoder.encodeBinary(ev));
    res.end();
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}` }) + "\n");
});
// Ends with its parent: the test closes stdin (or kills it).
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
