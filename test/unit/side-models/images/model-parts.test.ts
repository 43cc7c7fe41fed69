// Telling the image model's parts apart by their tensors (side-models/images/model-parts.ts): the names the
// publishers' files carry (Black Forest Labs' and ComfyUI's FLUX.2 klein, a Qwen3 encoder in Hugging Face's names or
// as GGUF, the FLUX.2 autoencoder), the near misses (FLUX.1, FLUX.2 dev, Qwen2.5, a 16-channel autoencoder), and the
// start errors that name what a folder holds.

import assert from "node:assert/strict";
import {mkdtempSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {describe, test} from "node:test";
import {ImagePartsError, classify, findImageParts, tensorNames} from "../../../../src/side-models/images/model-parts.ts";

/** A safetensors file with these tensors (shapes only: every tensor is empty-sized data here). */
function safetensors(path: string, tensors: Record<string, number[]>): void {
  let offset = 0;
  const header: Record<string, unknown> = {__metadata__: {format: "pt"}};
  for (const [name, shape] of Object.entries(tensors)) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 2;
    header[name] = {dtype: "F16", shape, data_offsets: [offset, offset + bytes]};
    offset += bytes;
  }
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(path, Buffer.concat([len, json, Buffer.alloc(offset)]));
}

const names = (list: string[], shape: number[] = [1]) => new Map(list.map((n) => [n, shape]));
const klein = ["double_blocks.0.img_attn.qkv.weight", "single_blocks.0.linear1.weight", "double_stream_modulation_img.lin.weight"];
const qwen3 = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_norm.weight", "model.layers.0.self_attn.q_proj.weight"];

describe("classify", () => {
  test("FLUX.2 klein, bare or under ComfyUI's prefix", () => {
    assert.equal(classify(names(klein)).part, "diffusion");
    assert.equal(classify(names(klein.map((n) => `model.diffusion_model.${n}`))).part, "diffusion");
  });

  test("FLUX.1 and FLUX.2 dev are named, not taken", () => {
    assert.match(classify(names(klein.slice(0, 2))).what, /FLUX\.1/);
    assert.match(classify(names([...klein, "single_blocks.47.linear1.weight"])).what, /FLUX\.2 dev/);
  });

  test("a Qwen3 encoder in Hugging Face's names or as GGUF; Qwen2.5 is refused", () => {
    assert.equal(classify(names(qwen3)).part, "textEncoder");
    assert.equal(classify(names(["token_embd.weight", "blk.0.attn_q_norm.weight"])).part, "textEncoder");
    const qwen25 = classify(names(["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight"]));
    assert.equal(qwen25.part, null);
    assert.match(qwen25.what, /not Qwen3/);
  });

  test("the FLUX.2 autoencoder by its 32 latent channels; FLUX.1's 16 are refused", () => {
    assert.equal(classify(new Map([["decoder.conv_in.weight", [512, 32, 3, 3]], ["encoder.conv_in.weight", [128, 3, 3, 3]]])).part, "vae");
    const flux1 = classify(new Map([["decoder.conv_in.weight", [512, 16, 3, 3]]]));
    assert.equal(flux1.part, null);
    assert.match(flux1.what, /16 latent channels/);
  });

  test("anything else is no part", () => {
    assert.deepEqual(classify(names(["fc.weight"])), {part: null, what: "not a part of an image model"});
  });
});

describe("findImageParts", () => {
  const folder = () => mkdtempSync(join(tmpdir(), "svc-parts-"));

  test("finds the three parts under any file names, and reads safetensors headers only", async () => {
    const dir = folder();
    safetensors(join(dir, "flux-2-klein-4b.safetensors"), Object.fromEntries(klein.map((n) => [n, [4, 4]])));
    safetensors(join(dir, "qwen_3_4b.safetensors"), Object.fromEntries(qwen3.map((n) => [n, [4]])));
    safetensors(join(dir, "ae.sft"), {"decoder.conv_in.weight": [4, 32, 3, 3]});
    writeFileSync(join(dir, "README.md"), "not a model");
    const parts = await findImageParts("nximg2-klein-4b", dir);
    assert.equal(parts.diffusion, join(dir, "flux-2-klein-4b.safetensors"));
    assert.equal(parts.textEncoder, join(dir, "qwen_3_4b.safetensors"));
    assert.equal(parts.vae, join(dir, "ae.sft"));
    assert.deepEqual([...(await tensorNames(join(dir, "ae.sft"))).entries()], [["decoder.conv_in.weight", [4, 32, 3, 3]]]);
  });

  test("a missing part stops the start naming what each file is", async () => {
    const dir = folder();
    safetensors(join(dir, "a.safetensors"), Object.fromEntries(klein.map((n) => [n, [1]])));
    writeFileSync(join(dir, "b.gguf"), "GGUF-truncated");
    await assert.rejects(findImageParts("nximg2-klein-4b", dir), (e: Error) => {
      assert.ok(e instanceof ImagePartsError);
      assert.match(e.message, /lacks the Qwen3 text encoder and the FLUX\.2 autoencoder/);
      assert.match(e.message, /a\.safetensors: the FLUX\.2 klein diffusion model/);
      assert.match(e.message, /b\.gguf: unreadable/);
      return true;
    });
  });

  test("two files of one part, a file, and no folder are refused", async () => {
    const dir = folder();
    safetensors(join(dir, "a.safetensors"), Object.fromEntries(klein.map((n) => [n, [1]])));
    safetensors(join(dir, "b.safetensors"), Object.fromEntries(klein.map((n) => [n, [1]])));
    await assert.rejects(findImageParts("nximg2-klein-4b", dir), /holds two files for the FLUX\.2 klein diffusion model/);
    await assert.rejects(findImageParts("nximg2-klein-4b", join(dir, "a.safetensors")), /is a file; give the folder/);
    await assert.rejects(findImageParts("nximg2-klein-4b", join(dir, "none")), /does not exist; give the folder/);
  });
});
