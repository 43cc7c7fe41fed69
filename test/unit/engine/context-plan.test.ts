// SVC_CTX_SIZE against the model's training length (engine/context-plan.ts): the default stays within it, a
// size the user sets is created as asked (as llama-server's -c), with one warning naming both lengths and the
// RoPE scaling llama.cpp applies, which is the GGUF's own.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {loadConfig} from "../../../src/config/config.ts";
import {beyondTrainingWarning, contextPositions, DEFAULT_CONTEXT_SIZE, mainContextAsk, ropeScalingOf} from "../../../src/engine/context-plan.ts";

/** Positions per region for SVC_CTX_SIZE (undefined: unset) on a model trained to `train`, through the config as the start reads it. */
function positions(setting: string | undefined, train: number): number {
  const config = loadConfig(setting === undefined ? {} : {SVC_CTX_SIZE: setting});
  return contextPositions(mainContextAsk(config.ctxSize), train);
}

const NONE = ropeScalingOf({rope: {freq_base: 100000, dimension_count: 64}}, 8192);

describe("positions per region", () => {
  test("unset: 8192, or the training length when that is shorter (as before)", () => {
    assert.equal(DEFAULT_CONTEXT_SIZE, 8192);
    assert.equal(positions(undefined, 8192), 8192);
    assert.equal(positions(undefined, 32768), 8192);
    assert.equal(positions(undefined, 2048), 2048, "the default never passes the training length");
  });

  test("set below, at and above the training length: exactly as asked", () => {
    assert.equal(positions("4096", 8192), 4096);
    assert.equal(positions("8192", 8192), 8192);
    assert.equal(positions("16384", 8192), 16384);
    assert.equal(positions("8192", 2048), 8192, "a set value passes a short training length too");
  });

  test("side models keep clamping (their ask says so)", () => {
    assert.equal(contextPositions({positions: 18_432, pastTraining: "clamp"}, 8192), 8192);
    assert.equal(contextPositions({positions: 1024, pastTraining: "clamp"}, 8192), 1024);
  });
});

describe("the warning", () => {
  test("only past the training length; it names both lengths and the scaling", () => {
    assert.equal(beyondTrainingWarning(4096, 8192, NONE), null);
    assert.equal(beyondTrainingWarning(8192, 8192, NONE), null);
    const line = beyondTrainingWarning(16384, 8192, NONE)!;
    assert.match(line, /SVC_CTX_SIZE 16384 is above the model's training length 8192/);
    assert.match(line, /quality past 8192 positions depends on RoPE scaling/);
    assert.match(line, /none \(the GGUF declares no RoPE scaling: positions past the training length are extrapolated\)/);
    assert.ok(!line.includes("\n"), "one line");
    const yarn = ropeScalingOf({rope: {scaling: {type: "yarn", factor: 4, original_context_length: 32768}}}, 131072);
    assert.match(beyondTrainingWarning(262144, 131072, yarn)!, /here yarn, factor 4, from 32768 positions/);
  });
});

describe("the RoPE scaling llama.cpp applies (the GGUF's)", () => {
  test("no scaling keys (SmolLM2's llama.* metadata): none, with the file's frequency base", () => {
    assert.deepEqual(NONE, {type: "none", factor: null, originalContextLength: null, freqBase: 100000});
    assert.equal(ropeScalingOf(undefined, 4096).freqBase, 10000, "llama.cpp's default base");
  });

  test("linear with factor 1, or type none with a factor, is no scaling", () => {
    assert.equal(ropeScalingOf({rope: {scaling: {type: "linear", factor: 1}}}, 4096).type, "none");
    assert.equal(ropeScalingOf({rope: {scaling: {type: "none", factor: 4}}}, 4096).type, "none");
  });

  test("linear with a factor (the type defaults to linear; the older scale_linear key counts)", () => {
    assert.deepEqual(ropeScalingOf({rope: {scaling: {factor: 2}}}, 4096), {type: "linear", factor: 2, originalContextLength: 4096, freqBase: 10000});
    assert.equal(ropeScalingOf({rope: {scale_linear: 4}}, 4096).factor, 4);
  });

  test("YaRN only when the file says so, from its original length (else the training length)", () => {
    assert.deepEqual(ropeScalingOf({rope: {freq_base: 1e6, scaling: {type: "yarn", factor: 4, original_context_length: 32768}}}, 131072),
      {type: "yarn", factor: 4, originalContextLength: 32768, freqBase: 1e6});
    assert.equal(ropeScalingOf({rope: {scaling: {type: "yarn", factor: 2}}}, 8192).originalContextLength, 8192);
  });
});
