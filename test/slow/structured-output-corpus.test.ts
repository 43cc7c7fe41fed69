// Every schema of the 50-schema corpus sampled with two seeds (temperature 0.8): every reply parses and
// validates with ajv. The greedy replies to the same corpus are checked on every `npm test` in
// test/e2e/structured-output.test.ts.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {CORPUS} from "../fixtures/schemas/corpus.ts";
import {type RunningServer} from "../../support/server.ts";
import {sharedServer} from "../../support/server-pool.ts";
import {ask, checkReply, inFlight} from "../e2e/structured-output-check.ts";

let server: RunningServer;

before(async () => {
  server = await sharedServer({SVC_PARALLEL: "4"});
});
after(async () => {
  await server?.stop();
});

describe("structured output, sampled", () => {
  test("every schema of the corpus with seeds 1 and 2: all parse and validate", async () => {
    const runs = CORPUS.flatMap((entry) => [
      {entry, label: "seed 1", extra: {temperature: 0.8, seed: 1}},
      {entry, label: "seed 2", extra: {temperature: 0.8, seed: 2}},
    ]);
    const results = await inFlight(runs, 4, async (r) => ({r, res: await server.client.chat.completions.create(ask(r.entry, r.extra))}));
    const failures: string[] = [];
    for (const {r, res} of results) {
      try {
        checkReply(r.entry, r.label, res);
      } catch (err) {
        failures.push((err as Error).message.split("\n")[0]!);
      }
    }
    assert.deepEqual(failures, [], `${failures.length} of ${results.length} replies failed:\n${failures.join("\n")}`);
  });
});
