// Runs everything CI runs: the unit tier (no model, seconds) first, then the e2e tier (spawns the
// server on the real default model). One node:test invocation so CI reads one summary; files run one
// at a time because e2e files each start a server and the machine has two cores.
import {spawnSync} from "node:child_process";
import {readdirSync, statSync} from "node:fs";
import {join} from "node:path";

function testFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const tiers = process.argv.slice(2);
const dirs = tiers.length > 0 ? tiers.map((t) => join("test", t)) : ["test/unit", "test/e2e"];
const files = dirs.flatMap(testFiles);
const result = spawnSync(process.execPath,
  ["--import", "tsx", "--test", "--test-concurrency=1", "--test-reporter=spec", ...files],
  {stdio: "inherit"});
process.exit(result.status ?? 1);
