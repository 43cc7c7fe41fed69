// Running svc as a service: the `svc` command and `npm start` run the compiled server (dist/), take their settings
// from flags, and stop on SIGTERM with exit 0 and nothing left running; requests in flight finish within the shutdown
// grace, and past it a stream ends with an error event and any other request gets 503 `server_shutting_down`. (That
// an accepted keep survives a SIGTERM sent the moment its reply arrives is in sessions.test.ts.)

import assert from "node:assert/strict";
import {execFile, spawnSync} from "node:child_process";
import {existsSync, readdirSync, readFileSync, statSync} from "node:fs";
import {join} from "node:path";
import {promisify} from "node:util";
import {before, describe, test} from "node:test";
import {SETTINGS, flagOf} from "../../src/config/settings.ts";
import {testModelPath} from "../../support/test-model.ts";
import {ROOT, get, post, startServer, type OwnServer} from "../../support/server.ts";

const run = promisify(execFile);

/** The newest modification time under dir, in ms. */
function newest(dir: string): number {
  let t = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path);
    t = Math.max(t, st.isDirectory() ? newest(path) : st.mtimeMs);
  }
  return t;
}

/**
 * dist/ as `npm ci` leaves it; built again here when the source is newer (a working copy between builds). The other
 * files' servers run from scripts/test.mjs's own build (.test-dist/), which this does not touch.
 */
before(() => {
  const main = join(ROOT, "dist", "main.js");
  if (existsSync(main) && statSync(main).mtimeMs >= newest(join(ROOT, "src"))) return;
  const build = spawnSync("npm", ["run", "build"], {cwd: ROOT, encoding: "utf8"});
  assert.equal(build.status, 0, `npm run build failed:\n${build.stdout}\n${build.stderr}`);
});

/** The pids of a process's children (Linux). */
function childrenOf(pid: number): number[] {
  const path = `/proc/${pid}/task/${pid}/children`;
  return existsSync(path) ? readFileSync(path, "utf8").trim().split(/\s+/).filter(Boolean).map(Number) : [];
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves once the server has a request running (a busy region in /slots). */
async function untilBusy(server: OwnServer): Promise<void> {
  for (;;) {
    const slots = await get(`${server.url}/slots`);
    if ((slots.body as {state?: string; is_processing?: boolean}[]).some((s) => s.is_processing)) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("the svc command", () => {
  test("`npx svc serve --help` lists a flag for every setting; `svc --version` prints the package's version", async () => {
    const help = (await run("npx", ["svc", "serve", "--help"], {cwd: ROOT})).stdout;
    for (const s of Object.values(SETTINGS)) assert.ok(help.includes(flagOf(s)), `${s.name}: ${flagOf(s)} is in the help`);
    for (const short of ["-m VALUE", "-c VALUE", "-np VALUE", "-t VALUE"]) assert.ok(help.includes(short), short);
    const version = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
    assert.equal((await run("npx", ["svc", "--version"], {cwd: ROOT})).stdout, `svc ${version}\n`);
  });

  test("an unknown flag or a bad value stops the start with exit 2, naming the flag and the rule", async () => {
    const r = spawnSync(process.execPath, ["bin/svc.cjs", "serve", "--ctx-sise", "512", "-np", "0"], {cwd: ROOT, encoding: "utf8"});
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /--ctx-sise: not a flag of svc, did you mean --ctx-size\?/);
    assert.match(r.stderr, /-np "0": must be an integer from 1 to 64 \(SVC_PARALLEL\)/);
  });
});

describe("npm start and signals", () => {
  test("`npm start -- -m MODEL -c N -np N` serves with those settings; SIGTERM lets the request in flight finish, exits 0, leaves nothing running",
    {timeout: 240_000}, async () => {
      const model = await testModelPath();
      // Flags win over the environment: SVC_PARALLEL=3 and SVC_CTX_SIZE=2048 (the harness's) are overridden.
      const server = await startServer({SVC_PARALLEL: "3"}, 120_000, {command: "npm", args: ["start", "--", "-m", model, "-c", "1024", "-np", "2", "--port", "0", "--shutdown-grace-s", "100"]});
      const slots = (await get(`${server.url}/slots`)).body as {n_ctx: number}[];
      assert.deepEqual(slots.map((s) => s.n_ctx), [1024, 1024], "two regions (-np 2) of 1024 positions (-c 1024)");
      const servers = childrenOf(server.process.pid!);
      assert.equal(servers.length, 1, `npm runs the server itself (exec), no shell between: children ${servers}`);
      const inFlight = post(`${server.url}/v1/chat/completions`, {messages: [{role: "user", content: "Count."}], max_tokens: 60, temperature: 0});
      await untilBusy(server);
      server.process.kill("SIGTERM");
      const res = await inFlight;
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.choices[0].finish_reason, "length", "the reply ran to its budget within the grace (100 s, --shutdown-grace-s)");
      assert.equal(await server.exited, 0);
      assert.ok(!alive(servers[0]!), `the server process ${servers[0]} is gone`);
      assert.ok(server.logs.some((l) => /shutting down/.test(l)), server.logs.join("\n"));
    });

  test("past the grace a stream ends with a server_shutting_down error event and a plain request gets 503; the process exits 0",
    {timeout: 120_000}, async () => {
      const server = await startServer({SVC_SHUTDOWN_GRACE_S: "0.5", SVC_PARALLEL: "2"}, 120_000,
        {command: process.execPath, args: ["bin/svc.cjs", "serve"]});
      // The test model never ends a reply on its own: both run until their budget, far past the grace.
      const plain = post(`${server.url}/v1/chat/completions`, {messages: [{role: "user", content: "Count."}], max_tokens: 1900, temperature: 0});
      const stream = await fetch(`${server.url}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
        body: JSON.stringify({messages: [{role: "user", content: "Tell."}], max_tokens: 1900, temperature: 0, stream: true})});
      assert.equal(stream.status, 200);
      const reader = stream.body!.getReader();
      const decoder = new TextDecoder();
      const first = await reader.read();
      assert.ok(!first.done && first.value.length > 0, "the stream has begun");
      let raw = decoder.decode(first.value, {stream: true});
      await untilBusy(server);
      server.process.kill("SIGTERM");
      for (let r = await reader.read(); !r.done; r = await reader.read()) raw += decoder.decode(r.value, {stream: true});
      const data = raw.split("\n").filter((l) => l.startsWith("data: ") && l !== "data: [DONE]").map((l) => JSON.parse(l.slice(6)));
      assert.equal(data.at(-1)?.error?.code, "server_shutting_down", raw.slice(-600));
      assert.ok(!raw.includes("data: [DONE]"), "a cancelled stream does not claim to be done");
      const res = await plain;
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.error.code, "server_shutting_down");
      assert.match(res.body.error.message, /SVC_SHUTDOWN_GRACE_S/);
      assert.equal(await server.exited, 0);
    });
});
