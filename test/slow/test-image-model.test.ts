// The test image model (support/test-image-model.ts) as files: written twice, the bytes are the same; each file's
// header holds the tensors stable-diffusion.cpp identifies its part by, under the names the publishers' files use,
// in the shapes the engine reads the model's size from; and the cached folder holds exactly the three files. The
// engine itself is not run here (the image server's tests draw with these files). Slow tier: it writes about
// 80 MB three times (a few seconds).

import assert from "node:assert/strict";
import {createHash} from "node:crypto";
import {mkdir, mkdtemp, readdir, readFile, rm} from "node:fs/promises";
import {tmpdir} from "node:os";
import {dirname, join} from "node:path";
import {after, before, describe, test} from "node:test";
import {readSafetensorsHeader, type HeaderEntry} from "../../support/test-image-model/safetensors.ts";
import {TEST_IMAGE_MODEL_FILES, TEST_IMAGE_MODEL_SHAPE, testImageModelDir, testImageModelKey, writeTestImageModel} from "../../support/test-image-model.ts";

let root = "";
let first = "";

const sha256 = async (path: string) => createHash("sha256").update(await readFile(path)).digest("hex");

async function header(file: string): Promise<Map<string, HeaderEntry>> {
  return readSafetensorsHeader(join(first, file));
}

function assertShape(tensors: Map<string, HeaderEntry>, name: string, shape: number[]) {
  const t = tensors.get(name);
  assert.ok(t, `${name} is missing`);
  assert.deepEqual(t.shape, shape, `${name}'s shape`);
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), "svc-test-image-model-"));
  first = join(root, "first");
  await mkdir(first);
  await writeTestImageModel(first);
});

after(async () => {
  await rm(root, {recursive: true, force: true});
});

describe("the test image model", () => {
  test("is the same bytes when written again", async () => {
    const second = join(root, "second");
    await mkdir(second);
    await writeTestImageModel(second);
    for (const file of Object.values(TEST_IMAGE_MODEL_FILES)) {
      assert.equal(await sha256(join(second, file)), await sha256(join(first, file)), file);
    }
  });

  test("the transformer is FLUX.2 klein under BFL's names", async () => {
    const t = await header(TEST_IMAGE_MODEL_FILES.diffusionModel);
    const {width} = TEST_IMAGE_MODEL_SHAPE.transformer;
    // FLUX.2's shared modulation; klein has no 48th single block (dev has); no ComfyUI prefix, no guidance input.
    assertShape(t, "double_stream_modulation_img.lin.weight", [6 * width, width]);
    assertShape(t, "single_stream_modulation.lin.weight", [3 * width, width]);
    assert.ok(![...t.keys()].some((k) => k.startsWith("single_blocks.47.")));
    assert.ok(![...t.keys()].some((k) => k.startsWith("model.diffusion_model.") || k.startsWith("guidance_in.")));
    assertShape(t, "double_blocks.0.img_attn.qkv.weight", [3 * width, width]);
    assertShape(t, "double_blocks.0.txt_attn.norm.key_norm.scale", [128]); // the head size: one head of 128
    assertShape(t, "single_blocks.0.linear1.weight", [3 * width + 6 * width, width]);
    assertShape(t, "img_in.weight", [width, 128]); // 32 latent channels, patchified 2x2
    // The text context is the one-layer encoder's width: the final norm's output, no layer taps.
    assertShape(t, "txt_in.weight", [width, TEST_IMAGE_MODEL_SHAPE.textEncoder.width]);
    assert.ok(t.has("final_layer.linear.weight") && t.has("time_in.in_layer.weight"));
  });

  test("the text encoder is Qwen3 under Hugging Face's names", async () => {
    const t = await header(TEST_IMAGE_MODEL_FILES.textEncoder);
    const {width, layers, ff} = TEST_IMAGE_MODEL_SHAPE.textEncoder;
    assertShape(t, "model.embed_tokens.weight", [151_936, width]);
    assertShape(t, "model.layers.0.self_attn.q_proj.weight", [32 * 128, width]); // sd.cpp's fixed 32 heads of 128
    assertShape(t, "model.layers.0.self_attn.k_proj.weight", [8 * 128, width]);
    assertShape(t, "model.layers.0.self_attn.q_norm.weight", [128]);
    assertShape(t, "model.layers.0.mlp.gate_proj.weight", [ff, width]);
    assertShape(t, "model.norm.weight", [width]);
    assert.ok(!t.has(`model.layers.${layers}.input_layernorm.weight`));
    assert.ok(![...t.keys()].some((k) => k.startsWith("lm_head.") || k.startsWith("token_embd") || k.startsWith("blk.")));
  });

  test("the VAE is FLUX.2's, with the encoder at full width and a narrow decoder", async () => {
    const t = await header(TEST_IMAGE_MODEL_FILES.vae);
    const {decoderWidth} = TEST_IMAGE_MODEL_SHAPE.vae;
    assertShape(t, "encoder.conv_in.weight", [128, 3, 3, 3]);
    assertShape(t, "encoder.conv_out.weight", [64, 512, 3, 3]); // mean and log-variance of 32 channels
    assertShape(t, "encoder.quant_conv.weight", [64, 64, 1, 1]);
    assertShape(t, "decoder.post_quant_conv.weight", [32, 32, 1, 1]);
    assertShape(t, "decoder.conv_in.weight", [4 * decoderWidth, 32, 3, 3]); // sd.cpp reads the decoder's width here
    assertShape(t, "decoder.conv_out.weight", [3, decoderWidth, 3, 3]);
    assertShape(t, "encoder.mid.attn_1.q.weight", [512, 512, 1, 1]);
    assertShape(t, "bn.running_mean", [128]);
    assert.equal(t.get("bn.num_batches_tracked")?.dtype, "I64");
  });

  test("testImageModelDir writes exactly the three files under the cache, keyed by the recipe", async () => {
    const models = join(root, "cache", "models");
    const dir = await testImageModelDir(models);
    assert.equal(dir, join(dirname(models), "test-image-model", testImageModelKey()));
    assert.deepEqual((await readdir(dir)).sort(), Object.values(TEST_IMAGE_MODEL_FILES).sort());
    assert.deepEqual(await readdir(dirname(dir)), [testImageModelKey()]); // no temporary folder left behind
    assert.equal(await testImageModelDir(models), dir);
    const file = TEST_IMAGE_MODEL_FILES.diffusionModel;
    assert.equal(await sha256(join(dir, file)), await sha256(join(first, file)));
  });
});
