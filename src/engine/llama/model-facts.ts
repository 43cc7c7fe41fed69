// What EngineInfo says about the model itself, read from a loaded LlamaModel (full or vocab-only): the GGUF's
// architecture, name, training length and RoPE scaling, and its vocabulary's special tokens and template.
// The in-process engine and the remote engine (which reads the same GGUF's vocabulary) report them alike.

import type {LlamaModel} from "node-llama-cpp";
import type {EngineInfo} from "../engine.ts";
import {ropeScalingOf} from "../context-plan.ts";

export type ModelFacts = Pick<EngineInfo, "architecture" | "modelName" | "trainContextSize" | "ropeScaling" | "vocabSize" | "bosToken" | "eosToken" |
  "prependBos" | "eogTokenIds" | "bosText" | "eosText" | "chatTemplate">;

export function modelFacts(model: LlamaModel, vocabSize: number, eog: ReadonlySet<number>): ModelFacts {
  const meta = model.fileInfo.metadata;
  const architecture = String(meta.general.architecture);
  return {
    architecture,
    modelName: typeof meta.general.name === "string" && meta.general.name !== "" ? meta.general.name : null,
    trainContextSize: model.trainContextSize,
    ropeScaling: ropeScalingOf((meta as Record<string, unknown>)[architecture], model.trainContextSize),
    vocabSize,
    bosToken: model.tokens.bos,
    eosToken: model.tokens.eos,
    prependBos: model.tokens.shouldPrependBosToken,
    eogTokenIds: [...eog].sort((a, b) => a - b),
    bosText: model.tokens.bosString ?? "",
    eosText: model.tokens.eosString ?? "",
    chatTemplate: (meta.tokenizer as {chat_template?: string}).chat_template ?? null,
  };
}
