// The GGUF header reader the image model's part finder uses (models/gguf-tensors.ts): the same names and shapes as
// node-llama-cpp's reader on a real file, and a clear error, not a wait, on a file cut short.

import assert from "node:assert/strict";
import {mkdtempSync, readFileSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {test} from "node:test";
import {readGgufFileInfo} from "node-llama-cpp";
import {GgufHeaderError, ggufTensorShapes} from "../../../src/models/gguf-tensors.ts";
import {testModelPath} from "../../../support/test-model.ts";

test("names and shapes as node-llama-cpp reads them (PyTorch order)", async () => {
  const path = await testModelPath();
  const info = await readGgufFileInfo(path, {logWarnings: false});
  const want = new Map((info.fullTensorInfo ?? []).map((t) => [t.name, t.dimensions.map(Number).reverse()]));
  assert.ok(want.size > 5);
  assert.deepEqual(await ggufTensorShapes(path), want);
});

test("a file cut anywhere in its header is refused as truncated", async () => {
  const bytes = readFileSync(await testModelPath());
  const dir = mkdtempSync(join(tmpdir(), "svc-gguf-"));
  for (const cut of [10, 30, 200, 4000]) {
    const path = join(dir, `cut-${cut}.gguf`);
    writeFileSync(path, bytes.subarray(0, cut));
    await assert.rejects(ggufTensorShapes(path), (e: Error) => e instanceof GgufHeaderError && /truncated/.test(e.message), `cut at ${cut}`);
  }
  const path = join(dir, "not.gguf");
  writeFileSync(path, "GGML-not-gguf-at-all-xxxxxxxx");
  await assert.rejects(ggufTensorShapes(path), /does not start with GGUF/);
});
