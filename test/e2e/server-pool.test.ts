// The shared-server pool of the test harness (support/server.ts): a server stopped to make room and started again
// under the same settings answers on its new port (its log once kept the old server's "listening" line, and the
// next file met "connection refused"). Runs in a pool of its own, of one server, so the run's shared servers are
// left alone.

import assert from "node:assert/strict";
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, test} from "node:test";
import {get} from "../../support/server.ts";
import {sharedServer} from "../../support/server-pool.ts";

const runPool = process.env.TEST_SERVER_POOL;
const runPoolMax = process.env.TEST_POOL_MAX;
const pool = mkdtempSync(join(tmpdir(), "svc-pool-test-"));

after(() => {
  try {
    for (const e of JSON.parse(readFileSync(join(pool, "pool.json"), "utf8")) as {pid: number}[]) process.kill(e.pid, "SIGKILL");
  } catch {
    // nothing was started
  }
  rmSync(pool, {recursive: true, force: true});
  if (runPool === undefined) delete process.env.TEST_SERVER_POOL;
  else process.env.TEST_SERVER_POOL = runPool;
  if (runPoolMax === undefined) delete process.env.TEST_POOL_MAX;
  else process.env.TEST_POOL_MAX = runPoolMax;
});

test("a pooled server stopped to make room, asked for again, answers on its new port", async () => {
  process.env.TEST_SERVER_POOL = pool;
  process.env.TEST_POOL_MAX = "1";
  // Two settings for a pool of one: the first is stopped to make room for the second.
  const settings = [1, 2].map((n) => ({SVC_CTX_SIZE: String(512 * n), SVC_PARALLEL: "1"}));
  const first = await sharedServer(settings[0]!);
  await sharedServer(settings[1]!);
  assert.notEqual((await fetch(`${first.url}/health`).catch(() => null))?.status, 200, "the first server was stopped to make room");
  const again = await sharedServer(settings[0]!);
  assert.equal((await get(`${again.url}/health`)).status, 200);
});

test("a server another running file holds is not handed out: the same settings get a server of their own", async () => {
  process.env.TEST_SERVER_POOL = pool;
  process.env.TEST_POOL_MAX = "4";
  const settings = {SVC_CTX_SIZE: "768", SVC_PARALLEL: "1"};
  const mine = await sharedServer(settings);
  // Hand the lease to a process that runs (this file's parent) as if another file had taken the server.
  const index = join(pool, "pool.json");
  const entries = JSON.parse(readFileSync(index, "utf8")) as {port: number; holder: number}[];
  entries.find((e) => e.port === mine.port)!.holder = process.ppid;
  writeFileSync(index, JSON.stringify(entries));
  const other = await sharedServer(settings);
  assert.notEqual(other.port, mine.port);
  assert.equal((await get(`${mine.url}/health`)).status, 200, "the held server was not stopped");
  assert.equal((await get(`${other.url}/health`)).status, 200);
  // Asked again, this file gets the one it holds rather than a third.
  assert.equal((await sharedServer(settings)).port, other.port);
});
