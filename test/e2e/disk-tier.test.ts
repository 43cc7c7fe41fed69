// The disk tier on the test model: a held conversation evicted from memory is written to SVC_CACHE_DIR and
// loaded back when its prompt returns; a restarted server picks up where it was; a truncated file is
// skipped and removed; an unusable directory turns the tier off without stopping the server.

import assert from "node:assert/strict";
import {mkdtemp, readdir, rm, truncate, writeFile} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import type OpenAI from "openai";
import {get, startServer, type RunningServer} from "../../support/server.ts";

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;

const LONG_SYSTEM = "You answer questions about gardening. Keep answers short and practical, and mention the season when it matters. "
  .repeat(6);

describe("disk tier", () => {
  let dir: string;
  let server: RunningServer | undefined;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "svc-disk-"));
  });
  after(async () => {
    await server?.stop();
    await rm(dir, {recursive: true, force: true});
  });

  const start = async (env: Record<string, string> = {}) => {
    server = await startServer({SVC_PARALLEL: "1", SVC_CACHE_DIR: dir, ...env});
    return server;
  };
  const chat = async (messages: Msg[]) => {
    const res = await server!.client.chat.completions.create({model: "m", messages, max_tokens: 16, temperature: 0});
    return {text: res.choices[0]!.message.content!, prompt: res.usage!.prompt_tokens, cached: res.usage!.prompt_tokens_details!.cached_tokens!};
  };
  const report = async () => (await get(`${server!.url}/cache`)).body as {disk: Record<string, any>; miss_reasons: Record<string, number>};
  const convA: Msg[] = [{role: "system", content: LONG_SYSTEM}, {role: "user", content: "When should I plant tulip bulbs?"}];
  const convB: Msg[] = [{role: "user", content: "Write one sentence about a lighthouse at night."}];
  let coldA = "";

  test("an evicted conversation is written to disk and loaded back, with the same greedy reply", async () => {
    await start();
    const a = await chat(convA);
    coldA = a.text;
    assert.ok(a.prompt >= 128, `the first conversation is long enough to be worth a file (${a.prompt} tokens)`);
    await chat(convB);
    let r = await report();
    assert.equal(r.disk.enabled, true);
    assert.equal(r.disk.writes, 1, "B took the only region, so A's state went to disk");
    assert.ok(r.disk.bytes > 0 && r.disk.bytes <= r.disk.budget_bytes);
    const again = await chat(convA);
    r = await report();
    assert.equal(r.disk.hits, 1, "A came back from disk");
    assert.ok(again.cached >= a.prompt - 64, `reused ${again.cached} of ${again.prompt} tokens`);
    assert.equal(again.text, coldA, "a reply resumed from a disk state is byte-identical to the cold one");
    await server!.waitForLog(/cache=disk:\d+/);
  });

  test("after a restart the first request is served from disk", async () => {
    await server!.stop();
    const logs = server!.logs.join("\n");
    assert.match(logs, /held conversations written to the disk tier states=1/, "shutdown wrote the held conversation");
    await start();
    const again = await chat(convA);
    const r = await report();
    assert.equal(r.disk.hits, 1);
    assert.ok(again.cached > 0);
    assert.equal(again.text, coldA);
  });

  test("a truncated state file is skipped and removed at start, and requests go on", async () => {
    await chat(convB); // evicts A to disk again
    await server!.stop();
    const states = (await readdir(join(dir, "kv"))).filter((f) => f.endsWith(".ggsq"));
    assert.ok(states.length >= 1);
    for (const f of states) await truncate(join(dir, "kv", f), 1000);
    await start();
    const r = await report();
    assert.equal(r.disk.rejected, states.length, "every truncated file was rejected");
    assert.equal(r.disk.entries, 0);
    assert.deepEqual((await readdir(join(dir, "kv"))).filter((f) => f.endsWith(".ggsq")), [], "and removed");
    const a = await chat(convA);
    assert.equal(a.cached, 0);
    assert.equal(a.text, coldA);
  });

  test("a state written with flash attention on is foreign to a server with it off: removed, never loaded", async () => {
    await server!.stop();
    assert.match(server!.logs.join("\n"), /held conversations written to the disk tier states=1/);
    await start({SVC_FLASH_ATTENTION: "0"});
    const r = await report();
    assert.equal(r.disk.rejected, 1, "the state's identity says flash attention on");
    assert.equal(r.disk.entries, 0);
    const a = await chat(convA);
    assert.equal(a.cached, 0);
  });

  test("an unusable cache directory turns the tier off; the server starts and serves", async () => {
    await server!.stop();
    const file = join(dir, "plain-file");
    await writeFile(file, "not a directory");
    server = await startServer({SVC_PARALLEL: "1", SVC_CACHE_DIR: join(file, "sub")});
    const r = await report();
    assert.equal(r.disk.enabled, false);
    assert.match(String(r.disk.disabled_reason), /ENOTDIR|not writable|cannot/i);
    await server.waitForLog(/disk tier is off/i);
    const a = await chat(convA);
    assert.equal(a.text, coldA);
  });
});
