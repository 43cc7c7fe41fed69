// The load-time probe that decides how reused KV is matched (src/engine/llama/exactness-probe.ts), on the real
// library and model: with flash attention the rows-by-class rule holds, without it the probe sees rows whose
// numbers depend on their neighbours and falls back to pieces. Both answers from one probe show it can fail.

import assert from "node:assert/strict";
import {availableParallelism} from "node:os";
import {describe, test} from "node:test";
import {probeExactness, PROBE_TOKENS} from "../../src/engine/llama/exactness-probe.ts";
import {TILED_ROWS} from "../../src/engine/kv/row-classes.ts";
import {useDefaultModel} from "./default-model.ts";

const loaded = useDefaultModel();

async function probe(flashAttention: boolean) {
  const ctx = await loaded.model.createContext({contextSize: 512, batchSize: 2 * TILED_ROWS, flashAttention, threads: {ideal: Math.min(2, availableParallelism()), min: 1}});
  try {
    const text = loaded.model.tokenize("The quick brown fox jumps over the lazy dog while the river keeps running to the sea.");
    const tokens = Array.from({length: PROBE_TOKENS}, (_, i) => text[i % text.length]!);
    return await probeExactness(ctx.getSequence(), tokens);
  } finally {
    await ctx.dispose();
  }
}

describe("exactness probe", () => {
  test("flash attention on (the default): a row's KV depends only on its piece's class, so reuse is matched by rows", async () => {
    const r = await probe(true);
    assert.equal(r.match, "rows", r.reason ?? "");
    assert.equal(r.reason, null);
    assert.ok(r.ms > 0);
  });

  test("flash attention off: rows computed in groups change with the layout, so reuse stays matched by pieces", async () => {
    const r = await probe(false);
    assert.equal(r.match, "pieces");
    assert.match(r.reason ?? "", /depended on how its piece was composed/);
  });

  test("too few tokens is refused, not probed on a shorter layout", async () => {
    const ctx = await loaded.model.createContext({contextSize: 512, batchSize: 2 * TILED_ROWS});
    try {
      await assert.rejects(probeExactness(ctx.getSequence(), [1, 2, 3]), /needs 194 tokens/);
    } finally {
      await ctx.dispose();
    }
  });
});
