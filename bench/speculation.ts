// Prompt-lookup speculation: is it exact, and does it pay? node-llama-cpp is driven directly (no server),
// on the default model, one context, greedy. For each prompt (the 20 of test/e2e/determinism.test.ts plus
// five "copy this with one change" prompts where lookup should pay), up to 96 tokens are generated in every
// mode:
//
//   a   plain greedy: generated tokens evaluated one at a time (what the server does today; the reference)
//   b1  InputLookupTokenPredictor, default options (pattern >= 1 token, drafts of 1-3 tokens)
//   b2  InputLookupTokenPredictor, tuned (TUNED: pattern >= 2 tokens, 1-token drafts; see the report)
//   c   InputLookupTokenPredictor with 1-token drafts only (the smallest verification batch: 2 tokens)
//   d   no speculation, but every step evaluated as a 2-token batch: a predictor that always drafts one
//       filler token (refuted and erased unless greedy picks it). Greedy decoding on the multi-token
//       kernel path; the reference speculation should match if verification itself is exact.
//   e   b1, but a step without a lookup draft drafts the filler instead, so every step is a >=2-token batch.
//       e = d on every prompt means verification is exact and only the batch shape makes b differ from a.
//
// Per mode: prompts whose generated token sequence is identical to a's (and to d's); draft tokens proposed
// and accepted from sequence.tokenPredictions (validated + refuted, validated); the most drafts accepted in
// one step; how many draft tokens a verifier would have accepted (leading draft tokens equal to what the
// mode then generated); generation tokens/second (first to last token; modes interleaved prompt by prompt in
// one run) and its ratio to a. Then: the cost of one decode step by batch size, and a logits probe that
// locates the kernel that differs (one position evaluated alone vs co-batched with another sequence vs
// followed by a draft in its own sequence, with flash attention off as the engine runs, and on).
//
//   npx tsx bench/speculation.ts        (about 7 minutes on the shared 2-core box; 437 s measured)
//
// Env: SPEC_MAX_TOKENS (96), SPEC_PROMPTS (all 25; the copy prompts are kept), SPEC_THREADS (1, see THREADS).

import {availableParallelism, cpus, homedir} from "node:os";
import {join} from "node:path";
import {getLlama, InputLookupTokenPredictor, LlamaLogLevel, TokenPredictor, type LlamaContext, type LlamaContextSequence, type LlamaModel,
  type Token} from "node-llama-cpp";
import {DEFAULT_MAIN_MODEL_SPEC} from "../src/models/known-files.ts";
import {resolveModel} from "../src/models/resolve.ts";
import {createLogger} from "../src/observability/log.ts";
import {ChatTemplate, type TemplateMessage} from "../src/templates/chat-template.ts";
import {COPY_PROMPTS, DETERMINISM_PROMPTS} from "./speculation-prompts.ts";

const MAX_TOKENS = Number(process.env.SPEC_MAX_TOKENS ?? 96);
// One thread by default: on a 2-core box shared with other workers, two ggml threads spin-waiting on each
// other's barriers lose far more to preemption than they gain (measured here under load: 7 tok/s with 2
// threads against 50 tok/s with 1), which would drown the differences between modes. The engine uses
// 2 (SPEC_THREADS=2) on an idle box.
const THREADS = Number(process.env.SPEC_THREADS ?? 1);
const CTX = 1024;
// node-llama-cpp 3.22.1 accepts at most one draft token per step (see acceptedPerStep below), so longer
// drafts only add refuted rows; a 2-token pattern halves the drafts that get refuted.
const TUNED = {patternLength: {min: 2}, predictionLength: {min: 1, max: 1}};
const PROBE_STEPS = 24;
// SPEC_FLASH=1 runs the modes on a context with flash attention on (what SVC_FLASH_ATTENTION=1 gives the engine).
const FLASH = process.env.SPEC_FLASH === "1";
// SPEC_MODES=a,b2,d picks modes (a, the reference, is always run).

// --- prompts (bench/speculation-prompts.ts) ------------------------------------------------------------

const determinism = DETERMINISM_PROMPTS;
const copy = COPY_PROMPTS;

type Group = "det" | "copy";
interface Prompt { name: string; group: Group; tokens: Token[] }

/** Renders like the server does (src/pipeline/prompt.ts): template text with specials, client text without. */
function render(model: LlamaModel, template: ChatTemplate, messages: TemplateMessage[]): Token[] {
  const {segments} = template.render(messages, {addGenerationPrompt: true, continueFinalMessage: false});
  const tokens: Token[] = [];
  for (const seg of segments) if (seg.text.length > 0) tokens.push(...model.tokenize(seg.text, !seg.fromClient));
  const bos = model.tokens.bos;
  if (model.tokens.shouldPrependBosToken && bos !== null && tokens[0] !== bos) tokens.unshift(bos);
  return tokens;
}

// --- predictor wrapper -----------------------------------------------------------------------------------

/**
 * Wraps an optional predictor (public API: TokenPredictor is an exported abstract class). Records every
 * non-empty draft with the state length it was made at; with `filler`, a step the inner predictor has no
 * draft for drafts the filler token instead, so every step is a >=2-token batch.
 */
class Recorder extends TokenPredictor {
  drafts: {at: number; tokens: Token[]; filler: boolean}[] = [];
  private stateLength = 0;
  constructor(private readonly inner: TokenPredictor | null, private readonly filler: Token | null) {
    super();
  }
  override reset(params: Parameters<TokenPredictor["reset"]>[0]) {
    this.stateLength = params.stateTokens.length;
    return this.inner?.reset(params);
  }
  override pushTokens(tokens: Token[]) {
    this.stateLength += tokens.length;
    this.inner?.pushTokens(tokens);
  }
  override async predictTokens(): Promise<Token[]> {
    const drafted = this.inner ? await this.inner.predictTokens() : [];
    if (drafted.length > 0) {
      this.drafts.push({at: this.stateLength, tokens: drafted.slice(), filler: false});
      return drafted;
    }
    if (this.filler === null) return [];
    this.drafts.push({at: this.stateLength, tokens: [this.filler], filler: true});
    return [this.filler];
  }
  override stop(untilPredictionsExhausted?: boolean) {
    return this.inner?.stop(untilPredictionsExhausted);
  }
  override updateInputTokens(tokens: Token[]) {
    this.inner?.updateInputTokens(tokens);
  }
  override dispose() {
    return this.inner?.dispose();
  }
}

// --- modes -----------------------------------------------------------------------------------------------

type ModeId = "a" | "b1" | "b2" | "c" | "d" | "e" | "f";
interface Mode {
  id: ModeId;
  label: string;
  predictor: Recorder | null;
  seq?: LlamaContextSequence;
  genTokens: Record<Group, number>;
  genMs: Record<Group, number>;
  draftSteps: number;
  fillerSteps: number;
  proposed: number;
  accepted: number;
  wouldAccept: number;
  maxAcceptedPerStep: number;
  sameAsA: Record<Group, number>;
  sameAsD: Record<Group, number>;
  divergence: Map<string, number>;
}

interface GenResult { tokens: number[]; firstAt: number; lastAt: number; maxAcceptedPerStep: number }

async function generate(seq: LlamaContextSequence, model: LlamaModel, prompt: Token[], predictor: TokenPredictor | null): Promise<GenResult> {
  await seq.clearHistory();
  predictor?.updateInputTokens(prompt); // on a raw sequence the caller tells the lookup what the input is
  const out: number[] = [];
  let firstAt = 0, lastAt = 0, maxAcceptedPerStep = 0;
  let validated = seq.tokenPredictions.validated;
  const gen = seq.evaluate(prompt, {temperature: 0, yieldEogToken: true});
  try {
    for (;;) {
      const r = await gen.next();
      if (r.done) break;
      lastAt = performance.now();
      if (out.length === 0) firstAt = lastAt;
      const v = seq.tokenPredictions.validated;
      maxAcceptedPerStep = Math.max(maxAcceptedPerStep, v - validated);
      validated = v;
      out.push(r.value);
      if (model.isEogToken(r.value) || out.length >= MAX_TOKENS) break;
    }
  } finally {
    await gen.return(undefined);
  }
  return {tokens: out, firstAt, lastAt, maxAcceptedPerStep};
}

const firstDiff = (x: readonly number[] | undefined, y: readonly number[] | undefined) => {
  if (!x || !y) return -2; // a mode not run
  const n = Math.max(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return i;
  return -1;
};

/** Leading draft tokens equal to what was generated next: what an exact verifier accepts. */
function wouldAccept(drafts: Recorder["drafts"], promptLength: number, out: readonly number[]): number {
  let n = 0;
  for (const d of drafts) {
    if (d.filler) continue;
    const j = d.at - promptLength; // the draft's first token predicts out[j]
    for (let k = 0; k < d.tokens.length && out[j + k] === d.tokens[k]; k++) n++;
  }
  return n;
}

// --- decode-step cost and logits probe -------------------------------------------------------------------

/**
 * ms per decode step of n tokens (a logit sampled on every row, as verification does) at the end of a prompt;
 * the sizes are interleaved rep by rep so a neighbour's load hits them alike.
 */
async function stepCosts(seq: LlamaContextSequence, prompt: Token[], filler: Token, sizes: number[], reps: number): Promise<number[]> {
  await seq.clearHistory();
  await seq.evaluateWithoutGeneratingNewTokens(prompt);
  const items = (n: number) => Array.from({length: n}, () => [filler, {generateNext: {token: true}}] as [Token, {generateNext: {token: true}}]);
  const total = sizes.map(() => 0);
  for (let r = -1; r < reps; r++) { // r = -1 warms up
    for (const [i, n] of sizes.entries()) {
      const t0 = performance.now();
      await seq.controlledEvaluate(items(n));
      if (r >= 0) total[i]! += performance.now() - t0;
      await seq.eraseContextTokenRanges([{start: prompt.length, end: seq.nextTokenIndex}]);
    }
  }
  return total.map((t) => t / reps);
}

const sameLogits = (x: Map<Token, number>, y: Map<Token, number>) => {
  if (x.size !== y.size) return false;
  for (const [t, v] of x) if (y.get(t) !== v) return false;
  return true;
};

/**
 * Greedy-walks PROBE_STEPS steps from the prompt's last token, evaluating each step's token (1) alone in
 * `alone`, and in `other` (2) co-batched with a token of `helper` (one 2-row batch: weight matmuls see 2
 * rows, attention 1 query per sequence) or (3) followed by a filler draft in the same sequence (attention
 * sees 2 queries; the filler is erased again). Returns the first step whose raw logits (whole vocabulary)
 * differ from (1), or -1.
 */
async function probe(kind: "cobatch" | "draft", alone: LlamaContextSequence, other: LlamaContextSequence, helper: LlamaContextSequence | null,
  prompt: Token[], filler: Token, batchLog: {log: number[] | null}): Promise<{first: number; steps: number; cobatched: number}> {
  const want = {generateNext: {logits: true, token: true}} as const;
  for (const s of [alone, other, helper]) await s?.clearHistory();
  await alone.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
  await other.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
  await helper?.evaluateWithoutGeneratingNewTokens(prompt.slice(0, -1));
  let token = prompt.at(-1)!, cobatched = 0;
  for (let i = 0; i < PROBE_STEPS; i++) {
    const ra = (await alone.controlledEvaluate([[token, want]]))[0]!.next;
    let lo: Map<Token, number> | undefined;
    if (kind === "cobatch") {
      batchLog.log = [];
      const [r] = await Promise.all([other.controlledEvaluate([[token, want]]), helper!.controlledEvaluate([[token, want]])]);
      if (batchLog.log.length === 1 && batchLog.log[0] === 2) cobatched++;
      batchLog.log = null;
      lo = r[0]!.next.logits;
    } else {
      lo = (await other.controlledEvaluate([[token, want], filler]))[0]!.next.logits;
      await other.eraseContextTokenRanges([{start: other.nextTokenIndex - 1, end: other.nextTokenIndex}]);
    }
    if (!ra.logits || !lo) throw new Error("no logits");
    if (!sameLogits(ra.logits, lo)) return {first: i, steps: i + 1, cobatched};
    token = ra.token!;
  }
  return {first: -1, steps: PROBE_STEPS, cobatched};
}

// --- main ------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const t0 = performance.now();
  const logger = createLogger("warn");
  const resolved = await resolveModel(DEFAULT_MAIN_MODEL_SPEC, {modelsDir: join(homedir(), ".cache", "svc", "models"), logger, progress: "lines"});
  const threads = Math.max(1, Math.min(THREADS, availableParallelism()));
  // As the engine does (src/engine/llama/llama-engine.ts): maxThreads 0, the context's own thread count,
  // flash attention pinned off.
  const llama = await getLlama({gpu: false, build: "never", maxThreads: 0, logLevel: LlamaLogLevel.error});
  const model = await llama.loadModel({modelPath: resolved.path, useMmap: true, defaultContextFlashAttention: false});
  const meta = model.fileInfo.metadata as {tokenizer?: {chat_template?: string}};
  const template = ChatTemplate.create(meta.tokenizer?.chat_template ?? "", {bosToken: model.tokens.bosString ?? "",
    eosToken: model.tokens.eosString ?? "", origin: "gguf"});
  const filler = model.tokenize("~")[0]!; // any token; refuted (and erased) unless greedy picks it

  const prompts: Prompt[] = [...determinism, ...copy].map((p) => ({name: p.name, group: p.group, tokens: render(model, template, p.messages)}));
  const limit = Number(process.env.SPEC_PROMPTS ?? prompts.length);
  const selected = [...prompts.filter((p) => p.group === "det").slice(0, Math.max(0, limit - copy.length)),
    ...prompts.filter((p) => p.group === "copy")].slice(0, limit);

  const zero = (): Record<Group, number> => ({det: 0, copy: 0});
  const mk = (id: ModeId, label: string, predictor: Recorder | null): Mode => ({id, label, predictor, genTokens: zero(), genMs: zero(),
    draftSteps: 0, fillerSteps: 0, proposed: 0, accepted: 0, wouldAccept: 0, maxAcceptedPerStep: 0, sameAsA: zero(), sameAsD: zero(),
    divergence: new Map()});
  const modes: Mode[] = [
    mk("a", "plain greedy, 1-token steps", null),
    mk("b1", "lookup, default options", new Recorder(new InputLookupTokenPredictor(), null)),
    mk("b2", `lookup, tuned ${JSON.stringify(TUNED)}`, new Recorder(new InputLookupTokenPredictor(TUNED), null)),
    mk("c", "lookup, 1-token drafts {predictionLength:{max:1}}", new Recorder(new InputLookupTokenPredictor({predictionLength: {min: 1, max: 1}}), null)),
    mk("d", "no lookup, filler draft every step (2-token steps)", new Recorder(null, filler)),
    mk("e", "lookup default, filler when no draft (>=2-token steps)", new Recorder(new InputLookupTokenPredictor(), filler)),
    mk("f", `plain greedy with flash attention ${FLASH ? "off" : "on"} (the other setting)`, null),
  ];

  const picked = new Set((process.env.SPEC_MODES ?? "a,b1,b2,c,d,e").split(",").map((m) => m.trim()));
  for (let i = modes.length - 1; i > 0; i--) if (!picked.has(modes[i]!.id)) modes.splice(i, 1);
  const batchLog: {log: number[] | null} = {log: null};
  const newContext = (flashAttention: boolean, sequences: number) => model.createContext({
    sequences, contextSize: CTX, batchSize: 512, threads: {ideal: threads, min: 1}, flashAttention, failedCreationRemedy: false,
    batching: {dispatchSchedule: "nextCycle", itemPrioritizationStrategy: ({items, size}) => {
      batchLog.log?.push(items.length);
      let left = size;
      return items.map((item) => {
        const processAmount = Math.min(item.tokens.length, left);
        left -= processAmount;
        return {item, processAmount};
      }).filter((p) => p.processAmount > 0);
    }},
  });
  const context: LlamaContext = await newContext(FLASH, modes.length + 2); // + helper and the probe's second sequence
  const otherFlash = modes.some((m) => m.id === "f") ? await newContext(!FLASH, 1) : null;
  for (const m of modes) m.seq = m.id === "f" ? otherFlash!.getSequence() : context.getSequence(m.predictor ? {tokenPredictor: m.predictor} : {});
  const helper = context.getSequence();

  const lengths = selected.map((p) => p.tokens.length);
  console.log(`svc speculation bench: ${resolved.path.split("/").pop()}, llama.cpp ${llama.llamaCppRelease.release}, ` +
    `${cpus()[0]?.model ?? "cpu"}, ${threads} thread(s), flash attention ${FLASH ? "on" : "off"}; ${selected.length} prompts ` +
    `(${selected.filter((p) => p.group === "copy").length} copy), prompt ${Math.min(...lengths)}-${Math.max(...lengths)} tokens, ` +
    `up to ${MAX_TOKENS} generated`);
  if (Math.max(...lengths) + MAX_TOKENS + 16 > CTX || Math.max(...lengths) > 512) throw new Error("a prompt is too long for the bench's context/batch");

  await generate(modes[0]!.seq!, model, selected[0]!.tokens.slice(0, 24), null); // warm-up, not measured

  console.log("\nper prompt: prompt tokens, tokens generated by a, first token index that differs from a (same = identical)");
  for (const [pi, p] of selected.entries()) {
    const outs = {} as Record<ModeId, number[]>;
    const order = modes.map((_, i) => modes[(i + pi) % modes.length]!); // rotate so no mode always runs first
    for (const m of order) {
      const before = m.seq!.tokenPredictions;
      const draftsBefore = m.predictor?.drafts.length ?? 0;
      const r = await generate(m.seq!, model, p.tokens, m.predictor);
      const after = m.seq!.tokenPredictions;
      m.proposed += (after.validated + after.refuted) - (before.validated + before.refuted);
      m.accepted += after.validated - before.validated;
      m.maxAcceptedPerStep = Math.max(m.maxAcceptedPerStep, r.maxAcceptedPerStep);
      if (m.predictor) {
        const drafts = m.predictor.drafts.slice(draftsBefore);
        m.draftSteps += drafts.filter((d) => !d.filler).length;
        m.fillerSteps += drafts.filter((d) => d.filler).length;
        m.wouldAccept += wouldAccept(drafts, p.tokens.length, r.tokens);
        m.predictor.drafts.length = 0;
      }
      m.genTokens[p.group] += r.tokens.length - 1;
      m.genMs[p.group] += r.lastAt - r.firstAt;
      outs[m.id] = r.tokens;
    }
    for (const m of modes) {
      const dA = firstDiff(outs[m.id], outs.a);
      m.divergence.set(p.name, dA);
      if (dA === -1) m.sameAsA[p.group]++;
      if (firstDiff(outs[m.id], outs.d) === -1) m.sameAsD[p.group]++;
    }
    console.log(`  ${p.name.padEnd(11)} ${String(p.tokens.length).padStart(3)} ${String(outs.a.length).padStart(3)}  ` +
      modes.slice(1).map((m) => `${m.id}=${m.divergence.get(p.name) === -1 ? "same" : m.divergence.get(p.name)}`).join(" ") +
      `  (e vs d: ${firstDiff(outs.e, outs.d) === -1 ? "same" : firstDiff(outs.e, outs.d)})`);
  }

  // --- table ---
  const nDet = selected.filter((p) => p.group === "det").length, nCopy = selected.length - nDet;
  const tps = (m: Mode, g: Group | "all") => {
    const tok = g === "all" ? m.genTokens.det + m.genTokens.copy : m.genTokens[g];
    const ms = g === "all" ? m.genMs.det + m.genMs.copy : m.genMs[g];
    return ms > 0 ? (tok * 1000) / ms : NaN;
  };
  const a = modes[0]!;
  const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "-");
  const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : "-");
  console.log("");
  console.log(`| mode | what | = a (det/${nDet}, copy/${nCopy}) | = d (det, copy) | draft steps (+filler) | proposed | accepted | ` +
    `max accepted in a step | would-accept | tok/s det | tok/s copy | tok/s all | ratio det | ratio copy | ratio all |`);
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (const m of modes) {
    console.log(`| ${m.id} | ${m.label} | ${m.sameAsA.det}, ${m.sameAsA.copy} | ${m.sameAsD.det}, ${m.sameAsD.copy} | ` +
      `${m.draftSteps}${m.fillerSteps ? ` (+${m.fillerSteps})` : ""} | ${m.proposed} | ${m.accepted} | ${m.maxAcceptedPerStep} | ${m.wouldAccept} | ` +
      `${f1(tps(m, "det"))} | ${f1(tps(m, "copy"))} | ${f1(tps(m, "all"))} | ${f2(tps(m, "det") / tps(a, "det"))} | ` +
      `${f2(tps(m, "copy") / tps(a, "copy"))} | ${f2(tps(m, "all") / tps(a, "all"))} |`);
  }
  console.log("proposed = validated + refuted, accepted = validated (sequence.tokenPredictions; filler drafts included). would-accept = " +
    "leading lookup-draft tokens equal to the tokens then generated (what an exact verifier accepts). tok/s = tokens after the first / " +
    "time from first to last token.");

  // --- decode-step cost by batch size ---
  const seqA = modes[0]!.seq!;
  const costPrompt = selected.find((p) => p.group === "copy")?.tokens ?? selected[0]!.tokens;
  const sizes = [1, 2, 3, 4, 9];
  const ms = await stepCosts(seqA, costPrompt, filler, sizes, 20);
  const costs = sizes.map((n, i) => `${n}: ${ms[i]!.toFixed(1)} ms${i ? ` (x${(ms[i]! / ms[0]!).toFixed(2)})` : ""}`);
  console.log(`\ndecode step cost by batch size (same sequence, a logit sampled on every row): ${costs.join(", ")}`);

  // --- logits probe ---
  if (FLASH) {
    console.log("\n(logits probe skipped under SPEC_FLASH=1: it compares flash attention off against on itself)");
    console.log(`\ntotal ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    await otherFlash?.dispose();
    await context.dispose();
    await model.dispose();
    await llama.dispose();
    return;
  }
  const probePrompts = [selected[0]!, selected[Math.min(1, selected.length - 1)]!, ...selected.filter((p) => p.group === "copy").slice(0, 2)];
  const fa = await newContext(true, 2);
  const [faAlone, faOther] = [fa.getSequence(), fa.getSequence()];
  const [plainAlone, plainOther] = [modes[0]!.seq!, context.getSequence()];
  console.log(`\nlogits probe: first of ${PROBE_STEPS} greedy steps whose raw logits differ (whole vocabulary, bitwise) from the same token evaluated alone; none = identical`);
  console.log("| prompt | co-batched with another sequence (FA off) | + 1 draft row in its own sequence (FA off) | + 1 draft row (FA on, vs alone with FA on) |");
  console.log("|---|---|---|---|");
  let cobatched = 0, costeps = 0;
  for (const p of probePrompts) {
    const co = await probe("cobatch", plainAlone, plainOther, helper, p.tokens, filler, batchLog);
    const dr = await probe("draft", plainAlone, plainOther, null, p.tokens, filler, batchLog);
    const df = await probe("draft", faAlone, faOther, null, p.tokens, filler, batchLog);
    cobatched += co.cobatched;
    costeps += co.steps;
    const show = (x: number) => (x === -1 ? "none" : `step ${x}`);
    console.log(`| ${p.name} | ${show(co.first)} | ${show(dr.first)} | ${show(df.first)} |`);
  }
  console.log(`(co-batched steps that really ran as one 2-item batch: ${cobatched} of ${costeps})`);

  console.log(`\ntotal ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  await fa.dispose();
  await otherFlash?.dispose();
  await context.dispose();
  await model.dispose();
  await llama.dispose();
}

await main();
