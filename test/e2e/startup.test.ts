// Start-up refusals: a bad setting or a missing model stops the start with a line that says what and why.

import assert from "node:assert/strict";
import {spawnSync} from "node:child_process";
import {describe, test} from "node:test";
import {fileURLToPath} from "node:url";
import {mkdtempSync, symlinkSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {serverArgs} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";
import {TEST_IMAGE_MODEL_FILES, testImageModelDir} from "../../support/test-image-model.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function start(env: Record<string, string>) {
  return spawnSync(process.execPath, serverArgs(), {cwd: ROOT, env: {...process.env, ...env}, encoding: "utf8", timeout: 60_000});
}

describe("start-up", () => {
  test("a bad setting stops the start naming the setting, the value and the rule", () => {
    const r = start({SVC_PORT: "eighty", SVC_PARALLEL: "0"});
    assert.equal(r.status, 2);
    assert.match(r.stderr, /bad setting SVC_PORT="eighty": must be an integer from 0 to 65535/);
    assert.match(r.stderr, /bad setting SVC_PARALLEL="0": must be an integer from 1 to 64/);
  });

  test("a misspelt setting is named", () => {
    const r = start({SVC_PROT: "1"});
    assert.equal(r.status, 2);
    assert.match(r.stderr, /SVC_PROT: not a setting of this server/);
  });

  test("a missing model stops the start with what was tried", () => {
    const r = start({SVC_MODEL: "/nonexistent/model.gguf", SVC_PORT: "0"});
    assert.equal(r.status, 3);
    assert.match(r.stderr, /no model: .*Tried: .*\/nonexistent\/model\.gguf/);
  });

  test("an image model folder without all three parts stops the start naming what each file is", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-klein-"));
    symlinkSync(join(await testImageModelDir(), TEST_IMAGE_MODEL_FILES.diffusionModel), join(dir, "flux-2-klein-4b.safetensors"));
    const r = start({SVC_MODEL: await testModelPath(), SVC_PORT: "0", SVC_NPU_MODELS: `nximg2-klein-4b=${dir}`});
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /nximg2-klein-4b: .* lacks the Qwen3 text encoder and the FLUX\.2 autoencoder; found flux-2-klein-4b\.safetensors: the FLUX\.2 klein diffusion model/);
  });
});
