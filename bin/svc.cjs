#!/usr/bin/env node
// The `svc` command (package.json "bin"; also what `npm start` runs). It is CommonJS on purpose: Node sizes its
// worker pool from UV_THREADPOOL_SIZE at the pool's first use, and loading an ES module already uses the pool, so
// this file sets the variable (1 unless the environment says otherwise; docs/performance.md says why) before it
// loads the compiled server in dist/. The server then runs in this process, which receives the signals.
"use strict";
const {existsSync} = require("node:fs");
const {join} = require("node:path");
const {pathToFileURL} = require("node:url");

process.env.UV_THREADPOOL_SIZE ??= "1";
const main = join(__dirname, "..", "dist", "main.js");
if (!existsSync(main)) {
  process.stderr.write(`svc: ${main} is missing: the server is not built. Run \`npm run build\` ` +
    "(npm ci does it, unless it ran with --ignore-scripts).\n");
  process.exit(1);
}
import(pathToFileURL(main).href);
