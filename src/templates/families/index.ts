// The known model families, most specific first: detection takes the first whose rule matches the template,
// and the generic family (calls taught in a system message) catches the rest.

import {apertus} from "./apertus.ts";
import {apriel} from "./apriel.ts";
import {commandRPlus} from "./command-r-plus.ts";
import {commandR7b} from "./command-r7b.ts";
import {deepseekV32, deepseekV4} from "./deepseek-dsml.ts";
import {deepseekR1} from "./deepseek-r1.ts";
import {deepseekV3} from "./deepseek-v3.ts";
import type {ModelFamily, TemplateFacts} from "./family.ts";
import {firefunctionV2} from "./firefunction.ts";
import {functionaryV31} from "./functionary.ts";
import {functionaryV32} from "./functionary-v32.ts";
import {gemma4} from "./gemma4.ts";
import {generic} from "./generic.ts";
import {gigachat3, gigachat31} from "./gigachat.ts";
import {glm46, glm47} from "./glm.ts";
import {gptOss} from "./gpt-oss.ts";
import {granite33, granite4} from "./granite.ts";
import {hermes} from "./hermes.ts";
import {hy3} from "./hy3.ts";
import {kimiK2} from "./kimi-k2.ts";
import {kimiK3} from "./kimi-k3.ts";
import {lfm2} from "./lfm2.ts";
import {llama3} from "./llama3.ts";
import {minicpm5} from "./minicpm5.ts";
import {minimaxM1} from "./minimax-m1.ts";
import {minimaxM2} from "./minimax-m2.ts";
import {minimaxM3} from "./minimax-m3.ts";
import {mistral} from "./mistral.ts";
import {mistralNemo} from "./mistral-nemo.ts";
import {museGlimmer} from "./muse-glimmer.ts";
import {nemotronV2} from "./nemotron.ts";
import {qwen3} from "./qwen3.ts";
import {qwen3Coder} from "./qwen3-coder.ts";
import {seedOss} from "./seed-oss.ts";
import {smollm3} from "./smollm3.ts";
import {solarOpen} from "./solar-open.ts";

export type {ModelFamily, TemplateFacts} from "./family.ts";
export {generic} from "./generic.ts";

/** Order matters: a family whose markers contain another's comes first (gpt-oss before anything with
 * <|start|>, the DSML and R1 forms before plain DeepSeek, Mistral before Mistral Nemo, Qwen XML before Hermes,
 * GigaChat 3.1 before GigaChat 3). */
export const FAMILIES: readonly ModelFamily[] = [
  gptOss,
  museGlimmer,
  gemma4,
  kimiK2,
  solarOpen,
  deepseekV32,
  deepseekV4,
  deepseekR1,
  deepseekV3,
  minimaxM3,
  minimaxM2,
  kimiK3,
  seedOss,
  hy3,
  glm47,
  glm46,
  minicpm5,
  qwen3Coder,
  functionaryV31,
  functionaryV32,
  mistral,
  mistralNemo,
  commandR7b,
  commandRPlus,
  nemotronV2,
  granite33,
  granite4,
  apriel,
  apertus,
  minimaxM1,
  firefunctionV2,
  llama3,
  gigachat31,
  gigachat3,
  lfm2,
  smollm3,
  qwen3,
  hermes,
  generic,
];

export function detectFamily(facts: TemplateFacts): ModelFamily {
  return FAMILIES.find((f) => f.matches(facts)) ?? generic;
}

export function familyById(id: string): ModelFamily | undefined {
  return FAMILIES.find((f) => f.id === id);
}
