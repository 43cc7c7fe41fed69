// The streaming guard's window at its edge (slow: a 1,490-token prompt and a 1,060-token reply, watched),
// moved from test/e2e/guard.test.ts, which tests the rest of the guard. The main model and the guard run the
// test model: the assertions are token counts.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {readSse, type RunningServer} from "../../support/server.ts";
import {sharedServer} from "../../support/server-pool.ts";
import {testModelPath} from "../../support/test-model.ts";

const GUARD = "nx3guard-stream-0.6b";
let server: RunningServer;
let chatUrl: string;

before(async () => {
  // The same settings as test/e2e/guard.test.ts (the final wait at its maximum: these tests check the verdicts;
  // the lag above the reply's length: 1,060 tokens of test-model words run to ~7,000 characters, all to be read).
  const model = await testModelPath();
  server = await sharedServer({SVC_NPU_MODELS: `${GUARD}=${model},nx3guard-gen-0.6b=${model}`, SVC_CTX_SIZE: "2560", SVC_PARALLEL: "1",
    SVC_GUARD_STREAMS: "1", SVC_GUARD_FINAL_S: "600", SVC_GUARD_LAG: "65536"});
  chatUrl = `${server.url}/v1/chat/completions`;
});
after(async () => {
  await server?.stop();
});

const ask = (content: string) => [{role: "user" as const, content}];
const guardOf = (chunks: any[]) => chunks.filter((c) => c !== "[DONE]" && c.svc_guard).map((c) => c.svc_guard);

describe("the window", () => {
  test("the guard reads the first 2,048 tokens (user message cut to 1,024, start and end kept) and then says it has stopped", async () => {
    // This prompt is ~1,490 tokens; the test model never ends a reply on its own, so the reply runs to its 1,060-token budget.
    const items = Array.from({length: 110}, (_, i) => `Item ${i} is a plain line of the inventory list.`).join(" ");
    // Streamed: keepalives hold the connection through a long run (a body could outlast fetch's header timeout).
    const res = await fetch(chatUrl, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({model: "m", messages: ask(`Here is an inventory list.\n${items}\nNow write the numbers from 1 to 1000, one per line, and nothing else.`),
        max_tokens: 1060, temperature: 0, stream: true, stream_options: {include_usage: true}, guard: {chunk: 128}})});
    const {data} = await readSse(res);
    const usage = data.find((c) => c !== "[DONE]" && c.usage).usage;
    assert.ok(usage.prompt_tokens > 1024, `the user message is longer than 1,024 tokens (${usage.prompt_tokens})`);
    assert.ok(usage.completion_tokens > 1030, `the reply is longer than the 1,024 tokens left (${usage.completion_tokens})`);
    const events = guardOf(data);
    assert.deepEqual(events.at(-2), {event: "stopped", tokens: 1024, window_tokens: 2048}, JSON.stringify(events));
    const end = events.at(-1);
    assert.equal(end.stopped, true);
    assert.equal(end.tokens, 1024);
    assert.equal(end.chunks, 8);
    assert.equal(end.complete, true);
  });
});
