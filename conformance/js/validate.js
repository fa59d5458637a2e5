#!/usr/bin/env node
// validate.js: judges JSON documents with the schemas of one published @ag-ui/core.
//
//   node validate.js < request.json
//
// request: {"jobs": [{"name", "core": "<version>", "kind": "input"|"events", "docs": [...]}]}
// kind "input":  each doc against that core's RunAgentInputSchema (what a producer built on
//                that core accepts); the parsed output is returned too.
// kind "events": each doc against that core's EventSchemas (1.0.0: from @ag-ui/core/schemas).
// Prints one JSON line per job: {name, results: [{ok, issues?, parsed?}]}.
"use strict";

const fs = require("fs");
const req = JSON.parse(fs.readFileSync(process.argv[2] || 0, "utf8"));

function schemas(core) {
  try {
    return require(`core-${core}/schemas`);
  } catch {
    return require(`core-${core}`);
  }
}

for (const job of req.jobs) {
  const mod = schemas(job.core);
  const schema = job.kind === "input" ? mod.RunAgentInputSchema : mod.EventSchemas;
  if (!schema) throw new Error(`core ${job.core} has no schema for ${job.kind}`);
  const results = job.docs.map((d) => {
    const r = schema.safeParse(d);
    if (r.success) return job.kind === "input" ? { ok: true, parsed: r.data } : { ok: true };
    return { ok: false, issues: r.error.issues.slice(0, 8).map((i) => ({ path: i.path.join("."), code: i.code, message: i.message })) };
  });
  process.stdout.write(JSON.stringify({ name: job.name, results }) + "\n");
}
