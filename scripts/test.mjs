// Runs the test tiers: `node scripts/test.mjs [tier ...]`, default unit, integration and e2e (what `npm test`
// runs before every commit); `npm run test:all` adds slow. One node:test invocation, so CI reads one summary.
// Files run one at a time: e2e files talk to real servers and the machine has two cores. Servers that e2e
// files start with sharedServer() are shared by settings across files (TEST_SERVER_POOL) and stopped at the end.
import {spawn} from "node:child_process";
import {existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";

const TIERS = ["unit", "integration", "e2e", "slow"];
const DEFAULT = ["unit", "integration", "e2e"];

function testFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const asked = process.argv.slice(2);
const unknown = asked.filter((t) => !TIERS.includes(t));
if (unknown.length > 0) {
  process.stderr.write(`unknown test tier ${unknown.join(", ")}; the tiers are ${TIERS.join(", ")}\n`);
  process.exit(2);
}
const tiers = asked.length > 0 ? asked : DEFAULT;
const files = tiers.flatMap((t) => testFiles(join("test", t)));
const pool = mkdtempSync(join(tmpdir(), "svc-test-pool-"));

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops the shared servers recorded in the pool index (test/e2e/harness.ts writes it): SIGTERM, then SIGKILL after 10 s. */
async function stopServers() {
  const index = join(pool, "pool.json");
  const pids = existsSync(index) ? JSON.parse(readFileSync(index, "utf8")).map((e) => e.pid).filter(alive) : [];
  for (const pid of pids) process.kill(pid, "SIGTERM");
  for (let waited = 0; waited < 10_000 && pids.some(alive); waited += 100) await new Promise((r) => setTimeout(r, 100));
  for (const pid of pids.filter(alive)) process.kill(pid, "SIGKILL");
  rmSync(pool, {recursive: true, force: true});
}

const child = spawn(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=1", "--test-reporter=spec", ...files],
  {stdio: "inherit", env: {...process.env, TEST_SERVER_POOL: pool}});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", async (code, signal) => {
  await stopServers();
  process.exit(code ?? (signal ? 1 : 0));
});
