// The image autoencoder: the FLUX.2 VAE's tensors in the layout of Black Forest Labs' ae.safetensors (FLUX.2-dev,
// the file sd.cpp's docs point to): the original LDM names (encoder.down.N.block.M, decoder.up.N.block.M, mid.attn_1
// with 1x1 conv projections), FLUX.2's quantisation convs inside the encoder and decoder (encoder.quant_conv,
// decoder.post_quant_conv, which sd.cpp's rename map expects) and the latent BatchNorm's statistics (bn.*). Copies
// in Diffusers' layout (encoder.down_blocks.N.resnets.M, quant_conv, ...) are renamed to these by sd.cpp.
//
// What stable-diffusion.cpp fixes and what it reads (auto_encoder_kl.hpp): 32 latent channels (64 out of the
// encoder: mean and log-variance), channel multipliers 1, 2, 4, 4 and 2 residual blocks per level (3 in the
// decoder). The encoder's base width is fixed at 128, the real model's. The decoder's is read from
// decoder.conv_in (its outputs / 4), for BFL's FLUX.2-small-decoder; its GroupNorms have 32 groups, and ggml's
// group norm gives a level narrower than 32 channels one channel per group, so the width may go below 32.
// sd.cpp ignores bn.*: it normalises latents with FLUX.2's statistics compiled in (so these hold 0 and 1).
//
// Cost (one thread): the encoder runs only for image-to-image and edits, and its 128-channel top levels make it
// about 9 s at 256x256 and 38 s at 512x512. The decoder runs for every picture; at base width 2 it takes 0.1 s at
// 256x256, 0.4 s at 512x512 and 3.5 s at 1024x1024 (at width 32: 2.2, 8 and 39 s). A TAEF2 (the tiny autoencoder,
// its channels fixed at 64) is no way round: sd.cpp takes one only as taesd_path, not as the VAE, and then both
// encodes (6.5 s at 512x512) and decodes (7 s at 512x512) with it.

import {WeightMaker} from "./weights.ts";
import type {TensorSpec} from "./safetensors.ts";

export interface VaeShape {
  /** The decoder's base width (its top level's channels; conv_in puts out 4x this). */
  decoderWidth: number;
}

/** Fixed by sd.cpp for the FLUX.2 VAE. */
export const FLUX2_VAE = {encoderWidth: 128, multipliers: [1, 2, 4, 4], blocks: 2, latent: 32, patchedLatent: 128} as const;

/** The VAE's tensors, convolutions scaled to keep activations near unit size (GroupNorm renormalises each block). */
export function vaeTensors(shape: VaeShape, seed: number): TensorSpec[] {
  const w = new WeightMaker(seed, "F16"); // BFL's VAE is f32; f16 halves the test file (the encoder is 34 M values)
  const {multipliers, blocks, latent} = FLUX2_VAE;
  const tensors: TensorSpec[] = [];
  const conv = (name: string, out: number, inputs: number, k: number, gain = 1) =>
    tensors.push(w.conv(`${name}.weight`, out, inputs, k, gain), w.constant(`${name}.bias`, [out], 0));
  const norm = (name: string, channels: number) =>
    tensors.push(w.constant(`${name}.weight`, [channels], 1), w.constant(`${name}.bias`, [channels], 0));
  const resnet = (name: string, inputs: number, out: number) => {
    norm(`${name}.norm1`, inputs);
    conv(`${name}.conv1`, out, inputs, 3);
    norm(`${name}.norm2`, out);
    conv(`${name}.conv2`, out, out, 3);
    if (inputs !== out) conv(`${name}.nin_shortcut`, out, inputs, 1);
  };
  const mid = (name: string, channels: number) => {
    resnet(`${name}.mid.block_1`, channels, channels);
    norm(`${name}.mid.attn_1.norm`, channels);
    for (const p of ["q", "k", "v", "proj_out"]) conv(`${name}.mid.attn_1.${p}`, channels, channels, 1);
    resnet(`${name}.mid.block_2`, channels, channels);
  };

  // Encoder: 3 RGB channels down to 64 (mean and log-variance of 32) at 1/8 the size.
  const e = FLUX2_VAE.encoderWidth;
  conv("encoder.conv_in", e, 3, 3);
  let channels = e;
  multipliers.forEach((m, level) => {
    for (let b = 0; b < blocks; b++) {
      resnet(`encoder.down.${level}.block.${b}`, channels, e * m);
      channels = e * m;
    }
    if (level < multipliers.length - 1) conv(`encoder.down.${level}.downsample.conv`, channels, channels, 3);
  });
  mid("encoder", channels);
  norm("encoder.norm_out", channels);
  conv("encoder.conv_out", 2 * latent, channels, 3);
  conv("encoder.quant_conv", 2 * latent, 2 * latent, 1);

  // Decoder: 32 latent channels up to RGB.
  const d = shape.decoderWidth;
  conv("decoder.post_quant_conv", latent, latent, 1);
  channels = d * multipliers[multipliers.length - 1]!;
  conv("decoder.conv_in", channels, latent, 3);
  mid("decoder", channels);
  for (let level = multipliers.length - 1; level >= 0; level--) {
    for (let b = 0; b < blocks + 1; b++) {
      resnet(`decoder.up.${level}.block.${b}`, channels, d * multipliers[level]!);
      channels = d * multipliers[level]!;
    }
    if (level > 0) conv(`decoder.up.${level}.upsample.conv`, channels, channels, 3);
  }
  norm("decoder.norm_out", channels);
  conv("decoder.conv_out", 3, channels, 3, 0.8);

  // The latent BatchNorm over the patchified latent (32 x 2 x 2 channels), as FLUX.2's VAE carries it.
  const {patchedLatent} = FLUX2_VAE;
  tensors.push(
    w.constant("bn.running_mean", [patchedLatent], 0, "F32"),
    w.constant("bn.running_var", [patchedLatent], 1, "F32"),
    {name: "bn.num_batches_tracked", dtype: "I64", shape: [], bytes: () => new Uint8Array(8)},
  );
  return tensors;
}
