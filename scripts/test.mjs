// Runs the test tiers: `node scripts/test.mjs [tier ...]`, default unit, integration, e2e and remote (what `npm test`
// runs before every commit); `npm run test:all` adds slow and nodes. The remote tier is the end-to-end dialect suites
// again, with every server on two llama-server replicas (TEST_REPLICAS=2, SVC_ENGINE): the remote engine must pass what
// the in-process one does. The nodes tier is the unit and integration files again under each other Node version pinned
// in scripts/node-versions.mjs (fetched from the npm registry into the cache on first use, before any tier runs), one
// count per version; every other tier runs under the Node that runs this script.
//
// The in-process tiers (unit, integration) run two files at a time; e2e two at a time on one core each, and its
// WHOLE_MACHINE files alone after; remote two at a time (its replicas have one thread each); slow one file at a
// time, each server on both cores; nodes as unit and integration, under each pinned Node in turn. Servers that
// e2e and slow files start with sharedServer() are shared by settings across files and tiers (TEST_SERVER_POOL,
// support/server-pool.ts) and stopped at the end. After each tier: its count, wall time, servers started and
// slowest files; last the sum, "N passed, N failed, N skipped".
import {spawn, spawnSync} from "node:child_process";
import {existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync} from "node:fs";
import {tmpdir} from "node:os";
import {dirname, join, relative} from "node:path";
import {NODE_PINS, nodeBinary} from "./node-versions.mjs";

const TIERS = ["unit", "integration", "e2e", "remote", "slow", "nodes"];
const DEFAULT = ["unit", "integration", "e2e", "remote"];
const IN_PROCESS = new Set(["unit", "integration"]);
/** The dialect suites the remote tier runs on replicas, two at a time (each replica has one thread), longest first. */
const REMOTE_FILES = ["sessions", "structured-output", "chat", "completions-and-ops", "responses", "messages", "tools", "coding-agent"]
  .map((name) => join("test", "e2e", `${name}.test.ts`));
/**
 * The e2e files that run alone, with every core: the determinism suite checks the rule that a lone decode step past
 * 256 positions runs on one thread of two (kv/decode-threads.ts), which a one-thread server cannot break.
 */
const WHOLE_MACHINE = [join("test", "e2e", "determinism.test.ts")];
/**
 * The e2e files that take longest two at a time, started first so that the two
 * lanes end together rather than one of them running the longest file alone at the end.
 */
const LONGEST_FIRST = ["images", "classify", "classifier", "families", "remote-engine", "sessions"].map((name) => join("test", "e2e", `${name}.test.ts`));
const longestFirst = (files) => [...LONGEST_FIRST.filter((f) => files.includes(f)), ...files.filter((f) => !LONGEST_FIRST.includes(f))];


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
/** One start record per invocation: a line per server its files started (support/server.ts writes it). */
const startFile = (i) => join(work, `starts-${i}.jsonl`);

function readStarts(files) {
  return files.filter((f) => existsSync(f)).flatMap((f) => readFileSync(f, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)));
}

/** Per test file: "N servers started, S s". */
function startsByFile(files) {
  const by = new Map();
  for (const s of readStarts(files)) {
    const f = relative(process.cwd(), s.file);
    const e = by.get(f) ?? {n: 0, ms: 0};
    by.set(f, {n: e.n + 1, ms: e.ms + s.ms});
  }
  return new Map([...by].map(([f, e]) => [f, `${e.n} server${e.n === 1 ? "" : "s"} started, ${(e.ms / 1000).toFixed(1)} s`]));
}

/** "N servers started (own/shared), S s until they listened": how much of a tier's wall time is start-up. */
function startSummary(files) {
  const starts = readStarts(files);
  if (starts.length === 0) return "";
  const own = starts.filter((s) => s.kind === "own").length;
  const seconds = starts.reduce((sum, s) => sum + s.ms, 0) / 1000;
  return `; ${starts.length} servers started (${own} own, ${starts.length - own} shared), ${seconds.toFixed(1)} s until they listened`;
}

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

/** Runs node:test over `files` under `node` (the pinned Node of the nodes tier, else the one running this script). */
function run(files, concurrency, counts, starts, env, node = process.execPath) {
  return new Promise((resolve) => {
    current = spawn(node, ["--import", "tsx", "--test", `--test-concurrency=${concurrency}`,
      "--test-reporter=spec", "--test-reporter-destination=stdout",
      "--test-reporter=./scripts/count-reporter.mjs", `--test-reporter-destination=${counts}`, ...files],
    {stdio: "inherit", env: {...process.env, TEST_SERVER_POOL: pool, TEST_START_RECORD: starts, ...env}});
    current.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

// A tier is one or two node:test invocations (each tier's count and wall time is printed). The e2e tier runs its files
// two at a time, each server on one core (TEST_SHARED_CORES): most of their time is a server starting or answering
// on one thread. The files in WHOLE_MACHINE run after, one at a time, with the engine's threads as a user gets them.
const tierRuns = (t) => {
  if (t === "nodes") return [];
  if (t === "remote") return [{files: REMOTE_FILES, concurrency: 2, env: {TEST_REPLICAS: "2", TEST_SHARED_CORES: "1"}}];
  const files = testFiles(join("test", t));
  if (IN_PROCESS.has(t)) return [{files, concurrency: 2, env: {}}];
  if (t !== "e2e") return [{files, concurrency: 1, env: {}}];
  return [{files: longestFirst(files.filter((f) => !WHOLE_MACHINE.includes(f))), concurrency: 2, env: {TEST_SHARED_CORES: "1"}},
    {files: files.filter((f) => WHOLE_MACHINE.includes(f)), concurrency: 1, env: {}}];
};
// The nodes tier is one group per pinned version: the in-process tiers' files, two at a time as there, under that
// version's node, with its folder first on PATH so that a test's child `node` is the same version. The binaries are
// fetched (or found in the cache) now, so that a failed fetch stops the run before any tier rather than after them.
const otherNodes = tiers.includes("nodes") ? NODE_PINS.map((pin) => ({pin, node: nodeBinary(pin)})) : [];
const nodesGroups = () => otherNodes.map(({pin, node}) => ({
  tier: `nodes (Node ${pin.version})`,
  runs: [{files: [...IN_PROCESS].flatMap((t) => testFiles(join("test", t))), concurrency: 2, node,
    env: {PATH: [dirname(node), process.env.PATH].filter(Boolean).join(":")}}],
}));
const groups = tiers.flatMap((t) => t === "nodes" ? nodesGroups() : [{tier: t, runs: tierRuns(t)}])
  .map((g) => ({...g, runs: g.runs.filter((r) => r.files.length > 0)})).filter((g) => g.runs.length > 0);

// The server tiers start a few hundred servers. Each runs from a build of the source as it is now, made here once
// into a folder of the run's own (.test-dist/: an `npm run build` or `npx svc` during the run rewrites dist/, and
// would pull it from under running servers): a server started through tsx spends about 0.9 s of CPU loading the
// TypeScript, which over these tiers is more than a minute of a 2-core machine. A test file run on its own (without
// this script) starts servers from source.
const SERVER_TIERS = new Set(["e2e", "remote", "slow"]);
const serverTierEnv = {};
if (groups.some((g) => SERVER_TIERS.has(g.tier))) {
  const t0 = performance.now();
  const build = spawnSync(process.execPath, [join("scripts", "build.mjs"), "--out", ".test-dist"], {stdio: "inherit"});
  if (build.status !== 0) {
    process.stdout.write("\nthe build failed (the errors are above), so the server tiers cannot run\n");
    process.exit(build.status ?? 1);
  }
  process.stdout.write(`built .test-dist/ for the server tiers in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  serverTierEnv.TEST_SERVER_DIST = ".test-dist";
}

let status = 0;
const lines = [];
const sum = {passed: 0, failed: 0, skipped: 0};
const failures = [];
for (const [i, g] of groups.entries()) {
  const t0 = performance.now();
  const c = {passed: 0, failed: 0, skipped: 0, files: {}};
  const starts = [];
  for (const [j, r] of g.runs.entries()) {
    const counts = countFile(`${i}-${j}`);
    starts.push(startFile(`${i}-${j}`));
    const code = await run(r.files, r.concurrency, counts, starts.at(-1), SERVER_TIERS.has(g.tier) ? {...serverTierEnv, ...r.env} : r.env, r.node);
    if (code !== 0) status = code;
    const rc = existsSync(counts) ? JSON.parse(readFileSync(counts, "utf8").trim().split("\n").pop()) : {passed: 0, failed: 0, skipped: 0};
    for (const k of Object.keys(sum)) c[k] += rc[k];
    Object.assign(c.files, rc.files ?? {});
    for (const f of rc.failures ?? []) failures.push({tier: g.tier, ...f});
  }
  for (const k of Object.keys(sum)) sum[k] += c[k];
  const wall = ((performance.now() - t0) / 1000).toFixed(1);
  const line = `${g.tier}: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped in ${wall} s${startSummary(starts)}`;
  lines.push(line);
  // After each tier: its count and wall time, and its ten slowest files (where a tier's minutes go).
  const slowest = Object.entries(c.files).sort((a, b) => b[1] - a[1]).slice(0, 10);
  const startsOf = startsByFile(starts);
  process.stdout.write(`\n${line}; slowest files:\n${slowest.map(([f, ms]) => `  ${(ms / 1000).toFixed(1).padStart(7)} s  ${relative(process.cwd(), f)}` +
    `${startsOf.has(relative(process.cwd(), f)) ? `  (${startsOf.get(relative(process.cwd(), f))})` : ""}`).join("\n")}\n`);
}
await stopServers();
rmSync(work, {recursive: true, force: true});
// Failed tests last, so that the tail of a long log names them (a parent test that failed because a child did is
// listed too; its message says so).
for (const f of failures) {
  process.stdout.write(`\nFAILED [${f.tier}] ${relative(process.cwd(), f.file)}: ${f.name}\n${f.message.replace(/^/gm, "    ")}\n`);
}
process.stdout.write(`\n${lines.join("\n")}\n${sum.passed} passed, ${sum.failed} failed, ${sum.skipped} skipped\n`);
if (status === 0 && sum.failed > 0) status = 1;
process.exit(status);
