// Every internal (undocumented) member of node-llama-cpp that svc relies on, in one file. The package is
// pinned exactly (package.json); test/integration/llama-internals.test.ts loads the real library and checks each
// member below still exists and behaves as assumed, so an upgrade fails loudly instead of silently.

import {createRequire} from "node:module";
import {dirname, join} from "node:path";
import type {Llama, LlamaContext, LlamaContextSequence, LlamaGrammar, LlamaGrammarEvaluationState, LlamaModel, TokenPredictor} from "node-llama-cpp";

export const PINNED_NODE_LLAMA_CPP = "3.22.1";

/** One queued decode of the context's batcher; `items[i]` handed to a batching strategy is built from `_queuedDecodes[i]`. */
export interface QueuedDecodeView {
  sequenceId: number;
  tokens: readonly number[];
}

/**
 * `LlamaContext._queuedDecodes`: the batcher's queue, in the same order as the `items` passed to a custom
 * prioritization strategy. BatchItem does not expose the sequence id, and we need it to order batch items
 * by sequence id (llama.cpp merges only consecutive ids into one ubatch) and to keep prefill pieces whole.
 */
export function queuedDecodes(context: LlamaContext): readonly QueuedDecodeView[] {
  const queue = (context as unknown as {_queuedDecodes?: QueuedDecodeView[]})._queuedDecodes;
  if (!Array.isArray(queue)) {
    throw new Error("node-llama-cpp internal LlamaContext._queuedDecodes is missing; svc needs node-llama-cpp " + PINNED_NODE_LLAMA_CPP);
  }
  return queue;
}

/**
 * `LlamaContextSequence._sequenceId`: the llama.cpp sequence id behind a sequence. Regions must be ids
 * 0..N-1 in order so that "lowest free region" means "lowest sequence id" for the batcher.
 */
export function sequenceIdOf(sequence: LlamaContextSequence): number {
  const id = (sequence as unknown as {_sequenceId?: number})._sequenceId;
  if (typeof id !== "number") {
    throw new Error("node-llama-cpp internal LlamaContextSequence._sequenceId is missing; svc needs node-llama-cpp " + PINNED_NODE_LLAMA_CPP);
  }
  return id;
}

/**
 * `LlamaGrammar._testText(text)`: whether the whole text matches the grammar (llama.cpp's full-match check).
 * Used by the grammar tests to prove a compiled grammar accepts and refuses the right texts without a model.
 */
export function grammarAcceptsText(grammar: LlamaGrammar, text: string): boolean {
  const test = (grammar as unknown as {_testText?: (t: string) => boolean})._testText;
  if (typeof test !== "function") {
    throw new Error("node-llama-cpp internal LlamaGrammar._testText is missing; svc needs node-llama-cpp " + PINNED_NODE_LLAMA_CPP);
  }
  return test.call(grammar, text);
}

interface GrammarBindings {
  _bindings?: {AddonSampler?: {
    acceptGrammarEvaluationStateToken?: (state: unknown, token: number) => void;
    canBeNextTokenForGrammarEvaluationState?: (state: unknown, token: number) => boolean;
  }};
}

/**
 * `Llama._bindings.AddonSampler.canBeNextTokenForGrammarEvaluationState(LlamaGrammarEvaluationState._state, token)`:
 * whether the grammar allows a token next (an end-of-generation token only where the grammar is complete), without a
 * context. The remote engine picks among a replica's candidates with it when it closes JSON at the end of the budget
 * (remote/remote-closing.ts); the library uses it for its draft predictions.
 */
export function grammarAllows(llama: Llama, state: LlamaGrammarEvaluationState, token: number): boolean {
  const can = (llama as unknown as GrammarBindings)._bindings?.AddonSampler?.canBeNextTokenForGrammarEvaluationState;
  const native = (state as unknown as {_state?: unknown})._state;
  if (typeof can !== "function" || native === undefined) {
    throw new Error("node-llama-cpp internal AddonSampler.canBeNextTokenForGrammarEvaluationState or LlamaGrammarEvaluationState._state is missing; " +
      "svc needs node-llama-cpp " + PINNED_NODE_LLAMA_CPP);
  }
  return can(native, token);
}

/**
 * `Llama._bindings.AddonSampler.acceptGrammarEvaluationStateToken(LlamaGrammarEvaluationState._state, token)`:
 * advances a grammar state by a token that was placed rather than sampled (the library's own sampler
 * advances it only for tokens it samples). Used when a JSON value starts inside a free-text token: the
 * pipeline places a `{` and binds the schema's grammar already past it. The library uses the same call
 * for its own function-calling grammar (LlamaChat) and draft predictions.
 */
export function acceptGrammarToken(llama: Llama, state: LlamaGrammarEvaluationState, token: number): void {
  const accept = (llama as unknown as GrammarBindings)._bindings?.AddonSampler?.acceptGrammarEvaluationStateToken;
  const native = (state as unknown as {_state?: unknown})._state;
  if (typeof accept !== "function" || native === undefined) {
    throw new Error("node-llama-cpp internal AddonSampler.acceptGrammarEvaluationStateToken or LlamaGrammarEvaluationState._state is missing; " +
      "svc needs node-llama-cpp " + PINNED_NODE_LLAMA_CPP);
  }
  accept(native, token);
}

/**
 * `LlamaContextSequence._copyStateFromOtherSequence(source, upToTokenIndex)`: llama.cpp's `seq_cp` of the whole
 * sequence, then an erase of everything from `upToTokenIndex` on. Used to move a held conversation to a low
 * region id (active requests must stay on low, contiguous ids). Without unified KV, llama.cpp copies the whole
 * stream buffer at the start of the next decode, so the source may be reused right after this returns.
 */
export async function copySequenceState(target: LlamaContextSequence, source: LlamaContextSequence, upTo: number): Promise<void> {
  const copy = (target as unknown as {_copyStateFromOtherSequence?: (s: LlamaContextSequence, upTo: number) => Promise<boolean>})._copyStateFromOtherSequence;
  if (typeof copy !== "function") {
    throw new Error("node-llama-cpp internal LlamaContextSequence._copyStateFromOtherSequence is missing; svc needs node-llama-cpp " + PINNED_NODE_LLAMA_CPP);
  }
  const ok = await copy.call(target, source, upTo);
  if (!ok || target.nextTokenIndex !== upTo) throw new Error(`copying a region's state failed (holds ${target.nextTokenIndex} tokens, wanted ${upTo})`);
}

/**
 * `LlamaModel.createContext({_embeddings: true})`: a plain context (sequences we drive ourselves) with
 * llama.cpp's embeddings on, as LlamaEmbeddingContext builds internally. The public embedding context
 * always wraps the input in [CLS]...[SEP]; the BERT side models need the tokens exactly as given
 * (/classify's add_special_tokens=false).
 */
export async function createEmbeddingsContext(model: LlamaModel,
  opts: {contextSize: number; batchSize: number; threads: number; sequences?: number}): Promise<LlamaContext> {
  const create = model.createContext as (o: Record<string, unknown>) => Promise<LlamaContext>;
  return create.call(model, {sequences: 1, ...opts, flashAttention: false, _embeddings: true});
}

/**
 * `LlamaContext._ctx.getEmbedding(tokenCount)`: the pooled vector (or, for RANK pooling, the classifier
 * scores) of the last decode. The addon reads llama.cpp's pooled output of sequence 0 only, so one decode
 * yields one input's vector: several inputs cannot share a decode (checked in the internals test).
 */
export function pooledEmbedding(context: LlamaContext, tokenCount: number): Float64Array {
  const native = (context as unknown as {_ctx?: {getEmbedding?: (n: number) => Float64Array}})._ctx;
  if (typeof native?.getEmbedding !== "function") {
    throw new Error("node-llama-cpp internal LlamaContext._ctx.getEmbedding is missing; svc needs node-llama-cpp " + PINNED_NODE_LLAMA_CPP);
  }
  return native.getEmbedding(tokenCount);
}

interface PredictorInternals {
  _tokenPredictor?: TokenPredictor;
  _tokenPredictorOwner?: object;
  _resetTokenPredictor?: boolean;
  _abortTokenPredictor?: (skipClearingPredictionsFromState?: boolean, skipLock?: boolean) => Promise<void>;
}

function predictorInternals(sequence: LlamaContextSequence): Required<PredictorInternals> {
  const s = sequence as unknown as PredictorInternals;
  if (!Object.hasOwn(s, "_tokenPredictor") || typeof s._abortTokenPredictor !== "function" || typeof s._resetTokenPredictor !== "boolean") {
    throw new Error("node-llama-cpp internal LlamaContextSequence._tokenPredictor / _abortTokenPredictor / _resetTokenPredictor is missing; " +
      "svc needs node-llama-cpp " + PINNED_NODE_LLAMA_CPP);
  }
  return s as Required<PredictorInternals>;
}

/**
 * `LlamaContextSequence._tokenPredictor` (set for one run): the public API fixes a sequence's predictor when
 * the sequence is made, but a region speculates only for some requests, and a sequence with a predictor
 * sends every evaluation through the speculative path (and its state copies lose track of drafts). So a
 * region gets one for the length of a run and gives it back with detachTokenPredictor.
 */
export function attachTokenPredictor(sequence: LlamaContextSequence, predictor: TokenPredictor): void {
  const s = predictorInternals(sequence);
  if (s._tokenPredictor != null) throw new Error("the region already has a token predictor");
  s._tokenPredictor = predictor;
  s._resetTokenPredictor = true; // the next speculative evaluation starts with predictor.reset()
}

/**
 * `LlamaContextSequence._abortTokenPredictor()`, then `_tokenPredictor` cleared: a draft that was verified but
 * not used yet (the run stopped first) still has its KV cell in the state, hidden from `nextTokenIndex`; the
 * abort erases it, so the region holds exactly the tokens that `contextTokens` lists.
 */
export async function detachTokenPredictor(sequence: LlamaContextSequence): Promise<void> {
  const s = predictorInternals(sequence);
  if (s._tokenPredictor == null) return;
  try {
    await s._abortTokenPredictor();
  } finally {
    s._tokenPredictor = undefined as never;
    s._tokenPredictorOwner = {};
  }
}

/**
 * The threads the context's next decode runs on. node-llama-cpp fixes them per context (its consumer of the
 * threads splitter hands `_wantedThreads` to `_ctx.setThreads` before every batch, and re-creates the consumer
 * from `_idealThreads`); svc sets them per batch from its batch strategy, which runs just before that hand-off.
 * Measured here (2 cores, bench/library-threads.ts): a one-token decode step runs faster on one thread than on
 * two (82 vs 74 tok/s alone), because the library hands each decode a fresh, short-lived worker pool, while a
 * prompt piece gains from both.
 */
export function setNextBatchThreads(context: LlamaContext, threads: number): void {
  const c = context as unknown as {_idealThreads?: number; _threadSplitterConsumer?: {_wantedThreads?: number}};
  if (typeof c._idealThreads !== "number") {
    throw new Error("node-llama-cpp internal LlamaContext._idealThreads is missing; svc needs node-llama-cpp " + PINNED_NODE_LLAMA_CPP);
  }
  c._idealThreads = threads;
  if (c._threadSplitterConsumer) c._threadSplitterConsumer._wantedThreads = threads;
}

/**
 * `LlamaModel._model.isEogToken(token)`: llama.cpp's own end-of-generation set (llama_vocab_is_eog). The public
 * `LlamaModel.isEogToken` also counts the vocabulary's EOS and EOT tokens, and for gpt-oss llama.cpp names
 * `<|end|>` the EOT while leaving it out of its end-of-generation set on purpose: harmony replies end a reasoning
 * message with `<|end|>` and go on. svc stops where llama.cpp's server stops.
 */
export function isEndOfGeneration(model: LlamaModel, token: number): boolean {
  const native = (model as unknown as {_model?: {isEogToken?: (t: number) => boolean}})._model;
  if (typeof native?.isEogToken !== "function") {
    throw new Error("node-llama-cpp internal LlamaModel._model.isEogToken is missing; svc needs node-llama-cpp " + PINNED_NODE_LLAMA_CPP);
  }
  return native.isEogToken(token);
}

/**
 * `Llama._bindings.AddonJinjaRenderer`: llama.cpp's own Jinja engine (common/jinja), compiled into the addon.
 * node-llama-cpp falls back to it when @huggingface/jinja cannot parse a template; svc does the same for
 * templates the JS engine cannot run (src/templates/renderer.ts). `new AddonJinjaRenderer(source)` compiles,
 * `.render(vars)` renders a plain object of variables.
 */
export function nativeJinja(llama: Llama): (source: string) => {render(vars: Record<string, unknown>): string} {
  const ctor = (llama as unknown as {_bindings?: {AddonJinjaRenderer?: new (source: string) => {render(vars: Record<string, unknown>): string}}})
    ._bindings?.AddonJinjaRenderer;
  if (typeof ctor !== "function") {
    throw new Error("node-llama-cpp internal Llama._bindings.AddonJinjaRenderer is missing; svc needs node-llama-cpp " + PINNED_NODE_LLAMA_CPP);
  }
  return (source) => new ctor(source);
}

/**
 * node-llama-cpp's folder of builds from source: `<package>/llama/localBuilds/<build name>`, a build being
 * complete when `Release/llama-addon.node`, `Release/_nlcBuildMetadata.json` and `buildDone.status` exist (what
 * its getLocalBuildBinaryPath checks). Not part of its API; engine-build-store.ts copies such folders in and out
 * of the models directory so a build survives `npm ci`.
 */
export function localBuildsDirectory(): string {
  const entry = createRequire(import.meta.url).resolve("node-llama-cpp");
  return join(dirname(entry), "..", "llama", "localBuilds");
}

export const DONE_MARKER = "buildDone.status";
export const LOCAL_BUILD_FILES = ["Release/llama-addon.node", "Release/_nlcBuildMetadata.json", DONE_MARKER] as const;

/** The list above, for the internals test. */
export const INTERNAL_MEMBERS = [
  "LlamaContext._queuedDecodes[].sequenceId",
  "LlamaContext._queuedDecodes[].tokens",
  "LlamaContextSequence._sequenceId",
  "LlamaGrammar._testText (tests only)",
  "Llama._bindings.AddonSampler.acceptGrammarEvaluationStateToken",
  "Llama._bindings.AddonSampler.canBeNextTokenForGrammarEvaluationState",
  "LlamaGrammarEvaluationState._state",
  "LlamaContextSequence._copyStateFromOtherSequence",
  "LlamaModel.createContext({_embeddings})",
  "LlamaContext._ctx.getEmbedding",
  "LlamaContextSequence._tokenPredictor",
  "LlamaContextSequence._resetTokenPredictor",
  "LlamaContextSequence._tokenPredictorOwner",
  "LlamaContextSequence._abortTokenPredictor",
  "LlamaContext._idealThreads",
  "LlamaContext._threadSplitterConsumer._wantedThreads",
  "Llama._bindings.AddonJinjaRenderer",
  "LlamaModel._model.isEogToken",
  "llama/localBuilds/<name>/{Release/llama-addon.node,Release/_nlcBuildMetadata.json,buildDone.status}",
] as const;
