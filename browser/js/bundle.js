#!/usr/bin/env node
// bundle.js OUTDIR: bundles page/page.js (with the @ag-ui/client releases
// it imports) into OUTDIR/page.js with the pinned esbuild, and copies
// page/index.html beside it.
"use strict";

const fs = require("fs");
const path = require("path");
const esbuild = require("esbuild");

const out = process.argv[2];
if (!out) {
  process.stderr.write("usage: bundle.js OUTDIR\n");
  process.exit(2);
}
const root = path.join(__dirname, "..");
esbuild
  .build({
    entryPoints: [path.join(root, "page", "page.js")],
    bundle: true,
    format: "iife",
    platform: "browser",
    target: "chrome120",
    define: { "process.env.NODE_ENV": '"production"' },
    logLevel: "warning",
    outfile: path.join(out, "page.js"),
  })
  .then(() => fs.copyFileSync(path.join(root, "page", "index.html"), path.join(out, "index.html")))
  .catch(() => process.exit(1)); // esbuild has printed the errors
