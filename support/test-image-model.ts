// The test image model: a FLUX.2 klein-shaped set of three safetensors files that stable-diffusion.cpp (as the
// inferna package bundles it) loads as "Flux.2 klein" and draws with, so the image tests run a real engine without
// the real 4B weights (16 GB). Written in TypeScript at first use, deterministically (the same bytes on every
// machine), into the cache beside the models directory, and reused.
//
// The files, named as their publishers name theirs (the engine is told which is which: diffusion_model_path,
// llm_path, vae_path):
// - flux-2-klein-test.safetensors: the transformer, BFL's tensor names (support/test-image-model/transformer.ts);
// - qwen3-text-encoder-test.safetensors: the Qwen3 text encoder, Hugging Face's names (text-encoder.ts);
// - flux2-vae-test.safetensors: the FLUX.2 VAE, encoder and decoder, BFL's layout (vae.ts).
//
// Shape: the smallest sd.cpp accepts where it costs time. A transformer of width 128 (one head of 128, the RoPE's
// fixed size) with one double and one single block; a one-layer Qwen3 of width 32 (its 32 heads of 128 and its
// 151,936-row embedding are fixed); a VAE decoder of base width 2 (the encoder is fixed at the real 128). Weights
// are random, scaled so activations stay near unit size: another seed draws another picture (pixels about 44/255
// apart on average), the same seed the same one, and another prompt another one (about 20-30/255 apart, even for a
// trailing full stop). The pictures are coloured noise textures.
//
// Cost in inferna 0.7.0 on one thread, 4 steps (sd.cpp's default sampler for FLUX.2: euler, flux2 schedule): load
// 0.3 s, and the first picture loads the weights lazily (+0.6 s); then 256x256 in 0.6 s, 512x512 in 1.7 s, 1024x1024
// in 14 s (0.4, 1.1 and 6 s with flash attention). Anything that encodes a picture (reference-image edits,
// image-to-image) runs the full-width VAE encoder: about 9 s at 256x256 and 38 s at 512x512, most of an edit's 42 s.
// And at 4 steps sd.cpp starts image-to-image of strength 0.75 or more from pure noise (its start index is
// floor(steps x strength), less one), so the input picture counts only below 0.75 (or with the sample arg
// strength_as_noise_level=true).

import {createHash} from "node:crypto";
import {existsSync} from "node:fs";
import {mkdir, rename, rm} from "node:fs/promises";
import {dirname, join} from "node:path";
import {defaultModelsDir} from "../src/models/resolve.ts";
import {writeSafetensors} from "./test-image-model/safetensors.ts";
import {textContextWidth, textEncoderTensors, type TextEncoderShape} from "./test-image-model/text-encoder.ts";
import {transformerTensors} from "./test-image-model/transformer.ts";
import {vaeTensors, type VaeShape} from "./test-image-model/vae.ts";

/** Bump when the recipe changes in a way the shape does not show (names, scales, dtypes, seeds). */
const RECIPE_VERSION = 1;

export interface TestImageModelShape {
  transformer: {width: number; doubleBlocks: number; singleBlocks: number};
  textEncoder: TextEncoderShape;
  vae: VaeShape;
}

export const TEST_IMAGE_MODEL_SHAPE: TestImageModelShape = {
  transformer: {width: 128, doubleBlocks: 1, singleBlocks: 1},
  textEncoder: {layers: 1, width: 32, ff: 64},
  vae: {decoderWidth: 2},
};

/** The three files, by the part the engine loads each as. */
export const TEST_IMAGE_MODEL_FILES = {
  diffusionModel: "flux-2-klein-test.safetensors",
  textEncoder: "qwen3-text-encoder-test.safetensors",
  vae: "flux2-vae-test.safetensors",
} as const;

/** Each file's own seed, so the files' weights are unrelated draws. */
const SEEDS = {diffusionModel: 0xf1a2, textEncoder: 0x9e3, vae: 0xae} as const;

/** A short hash of the recipe's version and shape: the cache folder's name, so a changed recipe is written afresh. */
export function testImageModelKey(shape: TestImageModelShape = TEST_IMAGE_MODEL_SHAPE): string {
  return createHash("sha256").update(JSON.stringify({version: RECIPE_VERSION, shape})).digest("hex").slice(0, 12);
}

/** Writes the three files of `shape` into `dir` (which must exist). */
export async function writeTestImageModel(dir: string, shape: TestImageModelShape = TEST_IMAGE_MODEL_SHAPE): Promise<void> {
  const metadata = {format: "pt", recipe: `svc test image model v${RECIPE_VERSION}`};
  const contextWidth = textContextWidth(shape.textEncoder);
  await writeSafetensors(join(dir, TEST_IMAGE_MODEL_FILES.diffusionModel),
    transformerTensors({...shape.transformer, contextWidth}, SEEDS.diffusionModel), metadata);
  await writeSafetensors(join(dir, TEST_IMAGE_MODEL_FILES.textEncoder), textEncoderTensors(shape.textEncoder, SEEDS.textEncoder), metadata);
  await writeSafetensors(join(dir, TEST_IMAGE_MODEL_FILES.vae), vaeTensors(shape.vae, SEEDS.vae), metadata);
}

const built = new Map<string, Promise<string>>();

/**
 * The folder holding the test image model's three files (TEST_IMAGE_MODEL_FILES), written on first use (once per
 * process). The folder is written whole under a temporary name and renamed into place, so a process never sees a
 * half-written set; when two processes write at once, the first rename wins and the other's copy is removed.
 */
export function testImageModelDir(modelsDir = defaultModelsDir()): Promise<string> {
  const dir = join(dirname(modelsDir), "test-image-model", testImageModelKey());
  let p = built.get(dir);
  if (!p) {
    p = (async () => {
      if (existsSync(dir)) return dir;
      await mkdir(dirname(dir), {recursive: true});
      const tmp = `${dir}.${process.pid}.tmp`;
      try {
        await rm(tmp, {recursive: true, force: true});
        await mkdir(tmp);
        await writeTestImageModel(tmp);
        try {
          await rename(tmp, dir);
        } catch (err) {
          // Another process renamed its copy into place first (the target is then a non-empty folder).
          if (!existsSync(dir)) throw err;
        }
      } finally {
        await rm(tmp, {recursive: true, force: true});
      }
      return dir;
    })();
    built.set(dir, p);
  }
  return p;
}
