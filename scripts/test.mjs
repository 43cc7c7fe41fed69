// Runs the test tiers: `node scripts/test.mjs [tier ...]`, default unit, integration, e2e and remote (what `npm test`
// runs before every commit); `npm run test:all` adds slow. The remote tier is the end-to-end dialect suites again,
// with every server on two llama-server replicas (TEST_REPLICAS=2, SVC_ENGINE): the remote engine must pass what
// the in-process one does.
//
// One node:test invocation per tier: the in-process tiers (unit, integration) two files at a time, the tiers
// that talk to real servers (e2e, slow) one file at a time, since each server wants both cores. Servers that
// e2e and slow files start with sharedServer() are shared by settings across files and tiers (TEST_SERVER_POOL)
// and stopped at the end. Then a line per tier (count and wall time), and last the sum,
// "N passed, N failed, N skipped".
import {spawn} from "node:child_process";
import {existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync} from "node:fs";
import {tmpdir} from "node:os";
import {join, relative} from "node:path";

const TIERS = ["unit", "integration", "e2e", "remote", "slow"];
const DEFAULT = ["unit", "integration", "e2e", "remote"];
const IN_PROCESS = new Set(["unit", "integration"]);
/** The dialect suites the remote tier runs on replicas. */
const REMOTE_FILES = ["chat", "completions-and-ops", "responses", "messages", "structured-output", "tools", "sessions", "coding-agent"]
  .map((name) => join("test", "e2e", `${name}.test.ts`));


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
const work = mkdtempSync(join(tmpdir(), "svc-test-"));
const pool = join(work, "pool");
mkdirSync(pool);
/** One count file per invocation (a reporter destination is written anew by each run). */
const countFile = (i) => join(work, `counts-${i}.json`);

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops the shared servers recorded in the pool index (support/server.ts writes it): SIGTERM, then SIGKILL after 10 s. */
async function stopServers() {
  const index = join(pool, "pool.json");
  const pids = existsSync(index) ? JSON.parse(readFileSync(index, "utf8")).map((e) => e.pid).filter(alive) : [];
  for (const pid of pids) process.kill(pid, "SIGTERM");
  for (let waited = 0; waited < 10_000 && pids.some(alive); waited += 100) await new Promise((r) => setTimeout(r, 100));
  for (const pid of pids.filter(alive)) process.kill(pid, "SIGKILL");
}

let current = null;
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => current?.kill(signal));

function run(files, concurrency, counts, env) {
  return new Promise((resolve) => {
    current = spawn(process.execPath, ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`,
      "--test-reporter=spec", "--test-reporter-destination=stdout",
      "--test-reporter=./scripts/count-reporter.mjs", `--test-reporter-destination=${counts}`, ...files],
    {stdio: "inherit", env: {...process.env, TEST_SERVER_POOL: pool, ...env}});
    current.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

// One invocation per tier, so each tier's count and wall time is printed.
const groups = tiers.map((t) => t === "remote"
  ? {tier: t, files: REMOTE_FILES, concurrency: 1, env: {TEST_REPLICAS: "2"}}
  : {tier: t, files: testFiles(join("test", t)), concurrency: IN_PROCESS.has(t) ? 2 : 1, env: {}}).filter((g) => g.files.length > 0);

let status = 0;
const lines = [];
const sum = {passed: 0, failed: 0, skipped: 0};
for (const [i, g] of groups.entries()) {
  const t0 = performance.now();
  const code = await run(g.files, g.concurrency, countFile(i), g.env);
  if (code !== 0) status = code;
  const c = existsSync(countFile(i)) ? JSON.parse(readFileSync(countFile(i), "utf8").trim().split("\n").pop()) : {passed: 0, failed: 0, skipped: 0};
  for (const k of Object.keys(sum)) sum[k] += c[k];
  const line = `${g.tier}: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped in ${((performance.now() - t0) / 1000).toFixed(1)} s`;
  lines.push(line);
  // After each tier: its count and wall time, and its ten slowest files (where a tier's minutes go).
  const slowest = Object.entries(c.files ?? {}).sort((a, b) => b[1] - a[1]).slice(0, 10);
  process.stdout.write(`\n${line}; slowest files:\n${slowest.map(([f, ms]) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${relative(process.cwd(), f)}`).join("\n")}\n`);
}
await stopServers();
rmSync(work, {recursive: true, force: true});
process.stdout.write(`\n${lines.join("\n")}\n${sum.passed} passed, ${sum.failed} failed, ${sum.skipped} skipped\n`);
if (status === 0 && sum.failed > 0) status = 1;
process.exit(status);
