// A node:test reporter that only counts: appends one JSON line {passed, failed, skipped, files, failures} per run to the
// file it writes to, `failures` naming each failed test (file, name, the error's first lines) so that scripts/test.mjs
// can repeat them after the sum, where a CI log's tail shows them, `files` holding each test file's wall time in ms (node reports a file's end as a test:complete named by
// its path: absolute up to Node 20, relative to the working directory from Node 22). scripts/test.mjs runs the tiers
// in more than one invocation, prints each tier's slowest files and the sum as the last line.
import {resolve} from "node:path";

export default async function* countReporter(source) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const files = {};
  const failures = [];
  for await (const event of source) {
    if (event.type === "test:complete" && event.data.file && resolve(event.data.name) === event.data.file) {
      files[event.data.file] = Math.round(event.data.details?.duration_ms ?? 0);
      continue;
    }
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    if (event.data.details?.type === "suite") continue;
    if (event.data.skip || event.data.todo) skipped++;
    else if (event.type === "test:pass") passed++;
    else {
      failed++;
      const error = event.data.details?.error;
      const message = String(error?.cause?.stack ?? error?.cause?.message ?? error?.message ?? error ?? "").split("\n").slice(0, 12).join("\n");
      failures.push({file: event.data.file ?? "", name: event.data.name, message});
    }
  }
  yield `${JSON.stringify({passed, failed, skipped, files, failures})}\n`;
}
