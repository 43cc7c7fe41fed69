// Deterministic weights for the test image model: every tensor draws from its own mulberry32 stream, seeded by a
// hash of its name and the file's seed, so a tensor's values do not depend on the order the tensors are made in,
// and adding a tensor to a file leaves the others' bytes alone. Values are uniform, not Gaussian: for random
// weights the distribution's shape does not matter, only its spread, and a uniform draw is several times cheaper
// than Box-Muller over the VAE encoder's 34 million values.

import {seededRandom} from "../../src/engine/logit-sampler.ts";
import {elementCount, encodeFloats, type Dtype, type TensorSpec} from "./safetensors.ts";

/** FNV-1a over the string's UTF-16 code units: a tensor name's seed. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** mulberry32: uniform in [0, 1), the same sequence on every machine (the engine's seeded sampler's generator). */
export const uniform = seededRandom;

type FloatDtype = Exclude<Dtype, "I64">;

/** Tensor specs for one file: `seed` tells the files apart, `dtype` is the file's type for matrices and kernels. */
export class WeightMaker {
  constructor(private readonly seed: number, private readonly dtype: FloatDtype) {}

  /** Uniform values of mean 0 and standard deviation `std` (so ±std·√3). */
  random(name: string, shape: number[], std: number, dtype: FloatDtype = this.dtype): TensorSpec {
    return {name, dtype, shape, bytes: () => {
      const next = uniform(hash32(name) ^ this.seed);
      const values = new Float32Array(elementCount(shape));
      const half = std * Math.sqrt(3);
      for (let i = 0; i < values.length; i++) values[i] = (2 * next() - 1) * half;
      return encodeFloats(values, dtype);
    }};
  }

  /** Every value `value` (a norm's scale of 1, a bias of 0). */
  constant(name: string, shape: number[], value: number, dtype: FloatDtype = this.dtype): TensorSpec {
    return {name, dtype, shape, bytes: () => encodeFloats(new Float32Array(elementCount(shape)).fill(value), dtype)};
  }

  /** A Linear weight [out, in] scaled by `gain`/√in, so a unit-size input gives outputs of about `gain`. */
  linear(name: string, out: number, inputs: number, gain = 1): TensorSpec {
    return this.random(name, [out, inputs], gain / Math.sqrt(inputs));
  }

  /** A conv kernel [out, in, k, k] scaled by `gain`/√(in·k²). */
  conv(name: string, out: number, inputs: number, k: number, gain = 1): TensorSpec {
    return this.random(name, [out, inputs, k, k], gain / Math.sqrt(inputs * k * k));
  }
}
