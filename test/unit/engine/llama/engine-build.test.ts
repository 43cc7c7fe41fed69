import assert from "node:assert/strict";
import {test} from "node:test";
import {engineIdentity, llamaBuildOptions} from "../../../../src/engine/llama/engine-build.ts";
import {PINNED_NODE_LLAMA_CPP} from "../../../../src/engine/llama/internals.ts";

test("the prebuilt engine never builds; its state identity is the one states were always written with", () => {
  assert.deepEqual(llamaBuildOptions("prebuilt"), {build: "never"});
  assert.equal(engineIdentity("prebuilt"), `node-llama-cpp ${PINNED_NODE_LLAMA_CPP}`);
});

test("the OpenMP build asks node-llama-cpp for its own build, never a prebuilt binary, and keeps states apart", () => {
  const opts = llamaBuildOptions("openmp"); // cmake and g++ are on this machine (the bench builds llama-server with them)
  assert.equal(opts.build, "auto");
  assert.equal(opts.usePrebuiltBinaries, false);
  assert.deepEqual(opts.cmakeOptions, {GGML_OPENMP: "ON"});
  assert.notEqual(engineIdentity("openmp"), engineIdentity("prebuilt"));
});

test("without cmake the OpenMP build is refused before anything starts, naming what to install", () => {
  const path = process.env.PATH;
  process.env.PATH = "/nonexistent";
  try {
    assert.throws(() => llamaBuildOptions("openmp"), /needs cmake and g\+\+ \(Debian\/Ubuntu: apt install cmake g\+\+\)/);
  } finally {
    process.env.PATH = path;
  }
});
