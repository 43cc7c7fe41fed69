// The shared-server pool of the test harness (support/server.ts): a server stopped to make room and started again
// under the same settings answers on its new port (its log once kept the old server's "listening" line, and the
// next file met "connection refused"). Runs in a pool of its own, so the run's shared servers are left alone.

import assert from "node:assert/strict";
import {mkdtempSync, readFileSync, rmSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, test} from "node:test";
import {get, sharedServer} from "../../support/server.ts";

const runPool = process.env.TEST_SERVER_POOL;
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
});

test("a pooled server stopped to make room, asked for again, answers on its new port", async () => {
  process.env.TEST_SERVER_POOL = pool;
  // Five settings for a pool of four: the first is stopped to make room for the fifth.
  const settings = [1, 2, 3, 4, 5].map((n) => ({SVC_CTX_SIZE: String(512 * n), SVC_PARALLEL: "1"}));
  for (const s of settings) await sharedServer(s);
  const again = await sharedServer(settings[0]!);
  assert.equal((await get(`${again.url}/health`)).status, 200);
});
