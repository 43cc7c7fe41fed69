// The load-time probe that decides how reused KV is matched (src/engine/llama/exactness-probe.ts), on the real
// library: with flash attention the rows-by-class rule holds, without it the probe sees rows whose numbers depend
// on their neighbours and falls back to pieces. Both answers from one probe show it can fail.
//
// Mostly on the test model (support/test-model.ts: the default model's architecture and Q4_1/Q8_0 types at a tiny
// size). The answer without flash attention needs the default model, SmolLM2: the kernels' grouping changes only
// the last bits of a row, and those reach the KV's F16 bytes only through many layers of its width and heads (its
// probe differs from layer 22 of 30 on); the test model's two layers never carry them there, so its probe says rows.

import assert from "node:assert/strict";
import {availableParallelism, homedir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import {getLlama, type Llama, type LlamaModel} from "node-llama-cpp";
import {probeExactness, probeTokens} from "../../src/engine/llama/exactness-probe.ts";
import {MERGED_TILED_ROWS} from "../../src/engine/kv/row-classes.ts";
import {DEFAULT_MAIN_MODEL_SPEC} from "../../src/models/known-files.ts";
import {resolveModel} from "../../src/models/resolve.ts";
import {createMemoryLogger} from "../../src/observability/log.ts";
import {testModelPath} from "../../support/test-model.ts";

let llama: Llama;
let testModel: LlamaModel;
before(async () => {
  llama = await getLlama({gpu: false, build: "never", maxThreads: availableParallelism()});
  testModel = await llama.loadModel({modelPath: await testModelPath()});
});
after(async () => {
  await testModel?.dispose();
  await llama?.dispose();
});

async function probe(model: LlamaModel, flashAttention: boolean) {
  const ctx = await model.createContext({contextSize: 512, batchSize: MERGED_TILED_ROWS, flashAttention, threads: {ideal: Math.min(2, availableParallelism()), min: 1}});
  try {
    const text = model.tokenize("The quick brown fox jumps over the lazy dog while the river keeps running to the sea.");
    const tokens = Array.from({length: probeTokens(MERGED_TILED_ROWS)}, (_, i) => text[i % text.length]!);
    return await probeExactness(ctx.getSequence(), tokens, MERGED_TILED_ROWS);
  } finally {
    await ctx.dispose();
  }
}

describe("exactness probe", () => {
  test("flash attention on (the default): a row's KV depends only on its piece's class, so reuse is matched by rows", async () => {
    const r = await probe(testModel, true);
    assert.equal(r.match, "rows", r.reason ?? "");
    assert.equal(r.reason, null);
    assert.ok(r.ms > 0);
  });

  // Trained model (SmolLM2, for its 30 layers of width 576, not its judgement): the test model's two layers never carry
  // the grouping's last-bit differences into the KV (see the top).
  test("flash attention off: rows computed in groups change with the layout, so reuse stays matched by pieces", async () => {
    const resolved = await resolveModel(DEFAULT_MAIN_MODEL_SPEC, {modelsDir: join(homedir(), ".cache", "svc", "models"), logger: createMemoryLogger(), progress: "lines"});
    const smol = await llama.loadModel({modelPath: resolved.path});
    try {
      const off = await probe(smol, false);
      assert.equal(off.match, "pieces");
      assert.match(off.reason ?? "", /depended on how its piece was composed/);
    } finally {
      await smol.dispose();
    }
  });

  test("too few tokens is refused, not probed on a shorter layout", async () => {
    const ctx = await testModel.createContext({contextSize: 512, batchSize: MERGED_TILED_ROWS});
    try {
      await assert.rejects(probeExactness(ctx.getSequence(), [1, 2, 3], MERGED_TILED_ROWS), new RegExp(`needs ${probeTokens(MERGED_TILED_ROWS)} tokens`));
    } finally {
      await ctx.dispose();
    }
  });
});
