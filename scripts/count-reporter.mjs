// A node:test reporter that only counts: appends one JSON line {passed, failed, skipped} per run to the file it
// writes to. scripts/test.mjs runs the tiers in more than one invocation and prints the sum as the last line.
export default async function* countReporter(source) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail") continue;
    if (event.data.details?.type === "suite") continue;
    if (event.data.skip || event.data.todo) skipped++;
    else if (event.type === "test:pass") passed++;
    else failed++;
  }
  yield `${JSON.stringify({passed, failed, skipped})}\n`;
}
