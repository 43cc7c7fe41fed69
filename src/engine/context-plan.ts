// How many positions a region gets against the length the model was trained for, and what RoPE scaling
// llama.cpp applies past it. As llama-server's `-c`: a size the user asks for is created as asked, even past
// the training length (llama.cpp only warns); the default never goes past it. The scaling is not ours to
// choose: node-llama-cpp 3.22.1 creates contexts with llama.cpp's default parameters (rope type
// "unspecified", frequency base and scale 0, YaRN factor -1), so llama.cpp takes them from the GGUF
// (llama-model.cpp, llama-context.cpp): `<arch>.rope.scaling.type` (absent: "linear"),
// `<arch>.rope.scaling.factor` or the older `<arch>.rope.scale_linear` (absent: 1, no scaling), YaRN only
// when the type says so. The factor is the file's, whatever size is asked: a model without scaling metadata
// runs positions past its training length unscaled (extrapolated).

/** Positions per region when SVC_CTX_SIZE is not set (at most the training length). */
export const DEFAULT_CONTEXT_SIZE = 8192;

/** What a caller asks of the engine: a size, and whether it may pass the training length. */
export interface ContextAsk {
  positions: number;
  /** "clamp": at most the training length (the default size, side models); "extend": as asked. */
  pastTraining: "clamp" | "extend";
}

/** The RoPE scaling llama.cpp applies, as the GGUF declares it. */
export interface RopeScaling {
  /** "none", "linear", "yarn", "longrope"…: the file's type; "none" when it declares no scaling (or a factor of 1). */
  type: string;
  /** The scaling factor (context multiple); null with "none". */
  factor: number | null;
  /** The length the scaling starts from (YaRN's original context); null with "none". */
  originalContextLength: number | null;
  /** RoPE frequency base (`<arch>.rope.freq_base`; llama.cpp's default 10,000 when absent). */
  freqBase: number;
}

/** SVC_CTX_SIZE → the ask: unset, the default size clamped to the training length; set, exactly that. */
export function mainContextAsk(setting: number | undefined): ContextAsk {
  return setting === undefined ? {positions: DEFAULT_CONTEXT_SIZE, pastTraining: "clamp"} : {positions: setting, pastTraining: "extend"};
}

/** The positions per region to create for an ask on a model trained to `trainContextSize`. */
export function contextPositions(ask: ContextAsk, trainContextSize: number): number {
  return ask.pastTraining === "extend" ? ask.positions : Math.min(ask.positions, trainContextSize);
}

/** The scaling llama.cpp applies, from the architecture's GGUF metadata (`<arch>.*`), by llama.cpp's own rules. */
export function ropeScalingOf(archMetadata: unknown, trainContextSize: number): RopeScaling {
  const rope = (archMetadata as {rope?: {freq_base?: unknown; scale_linear?: unknown; scaling?: Record<string, unknown>}} | null)?.rope;
  const freqBase = typeof rope?.freq_base === "number" ? rope.freq_base : 10_000;
  const declared = typeof rope?.scaling?.type === "string" ? rope.scaling.type : "linear";
  const rawFactor = typeof rope?.scaling?.factor === "number" ? rope.scaling.factor
    : typeof rope?.scale_linear === "number" ? rope.scale_linear : 0;
  const factor = rawFactor === 0 ? 1 : rawFactor;
  // llama.cpp: type none never scales; linear with factor 1 is no scaling either. YaRN with factor 1 is
  // still YaRN as far as llama.cpp is concerned (its extrapolation mix is on), so it is reported as such.
  if (declared === "none" || (declared === "linear" && factor === 1)) {
    return {type: "none", factor: null, originalContextLength: null, freqBase};
  }
  const original = rope?.scaling?.original_context_length;
  return {type: declared, factor, originalContextLength: typeof original === "number" && original > 0 ? original : trainContextSize, freqBase};
}

/** How /health and the start's warning describe the scaling. */
export function describeRope(rope: RopeScaling): string {
  return rope.type === "none"
    ? "none (the GGUF declares no RoPE scaling: positions past the training length are extrapolated)"
    : `${rope.type}, factor ${rope.factor}, from ${rope.originalContextLength} positions (as the GGUF declares it)`;
}

/** The start's warning when a region holds more positions than the model was trained for; null otherwise. */
export function beyondTrainingWarning(positions: number, trainContextSize: number, rope: RopeScaling): string | null {
  if (positions <= trainContextSize) return null;
  return `SVC_CTX_SIZE ${positions} is above the model's training length ${trainContextSize}: the context is created with ${positions} ` +
    `positions per region as asked; quality past ${trainContextSize} positions depends on RoPE scaling, here ${describeRope(rope)}`;
}
