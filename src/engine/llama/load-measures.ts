// What the engine measures about the model once, at load: whether reused KV may be matched by row class (the
// exactness probe) and what a two-token decode step costs (for prompt-lookup speculation).

import type {LlamaContextSequence, LlamaModel} from "node-llama-cpp";
import type {EngineInfo, SpeculationInfo} from "../engine.ts";
import {cachedProbe, probeExactness, probeTokens} from "./exactness-probe.ts";
import type {LlamaEngineOptions} from "./llama-engine.ts";
import {measureStepCost} from "./prompt-lookup.ts";

/** Text whose tokens fill the region while the step cost is measured (any ordinary text does). */
export const STEP_COST_TEXT = "The quick brown fox jumps over the lazy dog while the river keeps running to the sea, and the mill turns all day long.";

/** SVC_EXACT_REUSE: `pieces` as asked; `auto` probes (exactness-probe.ts) and matches by row class when it may. */
export async function reuseMatchAtLoad(opts: LlamaEngineOptions, model: LlamaModel, region0: LlamaContextSequence,
  threads: {prompt: number; decode: number}, mergedRows: number): Promise<EngineInfo["reuseMatch"]> {
  if ((opts.exactReuse ?? "auto") === "pieces") return {match: "pieces", reason: "SVC_EXACT_REUSE=pieces"};
  // Probed with the cache off too: the match decides how every prompt is cut, and greedy output must not
  // depend on SVC_PROMPT_CACHE.
  const text = model.tokenize(STEP_COST_TEXT) as number[];
  const tokens = Array.from({length: probeTokens(mergedRows)}, (_, i) => text[i % text.length]!);
  const probe = await cachedProbe(opts.probeStore ? {dir: opts.probeStore.dir, key: {...opts.probeStore.key as object, threads}} : null,
    mergedRows, () => probeExactness(region0, tokens, mergedRows));
  opts.logger.info("exact reuse", {match: probe.match, probe_ms: Math.round(probe.ms), ...(probe.cached ? {from: "an earlier start's probe"} : {}),
    ...(probe.reason ? {reason: probe.reason} : {})});
  return {match: probe.match,
    reason: probe.reason ?? `probed${probe.cached ? " at an earlier start" : " at load"} (${Math.round(probe.ms)} ms): ` +
      "a row's KV depends only on whether its piece was tiled"};
}

export async function speculationAtLoad(opts: LlamaEngineOptions, model: LlamaModel, region0: LlamaContextSequence): Promise<SpeculationInfo> {
  if (opts.speculation === "off") return {mode: "off", active: false, stepCost: null, reason: "SVC_SPECULATION=off"};
  if (!opts.flashAttention) {
    // config.ts refuses "on" without flash attention; "auto" just stays off.
    opts.logger.info("prompt-lookup speculation is off: it needs SVC_FLASH_ATTENTION=1 to keep greedy output exact");
    return {mode: opts.speculation, active: false, stepCost: null, reason: "flash attention is off"};
  }
  const stepCost = await measureStepCost(region0, model.tokenize(STEP_COST_TEXT) as number[]);
  const hitRate = Math.max(0, stepCost - 1);
  opts.logger.info("prompt-lookup speculation", {mode: opts.speculation, step_cost: Number(stepCost.toFixed(2)),
    drafts_when: opts.speculation === "on" ? "always"
      : hitRate >= 1 ? "never (a draft step costs two plain steps)"
      : `hit rate above ${hitRate.toFixed(2)}, alone`});
  return {mode: opts.speculation, active: true, stepCost, reason: null};
}

