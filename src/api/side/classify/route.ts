// POST /classify: own sequence-classifier fine-tunes (vLLM's classification response shape). Text is
// tokenized and wrapped in [CLS]...[SEP] unless add_special_tokens is false; token ids are used as sent.
// truncate_prompt_tokens keeps the start of an input (the [CLS] the head reads is there), [SEP] kept last.

import {randomBytes} from "node:crypto";
import type {FastifyInstance, FastifyReply, FastifyRequest} from "fastify";
import type {Token} from "../../../engine/index.ts";
import {ApiError, invalidField} from "../../../core/errors.ts";
import {activate, type ClassifierRunner} from "../../../side-models/classifier/runner.ts";
import type {SideModels} from "../../../side-models/side-models.ts";
import type {ServerDeps} from "../../deps.ts";
import {hangUpSignal} from "../../serve-generation.ts";
import {decodeClassify, type ClassifyRequest} from "./decode.ts";

function tokensOf(runner: ClassifierRunner, input: ClassifyRequest["inputs"][number], req: ClassifyRequest): Token[] {
  if ("ids" in input) return req.truncate !== null ? input.ids.slice(0, req.truncate) : input.ids;
  let body = runner.tokenize(input.text);
  const specials = req.addSpecialTokens ? 2 : 0;
  if (req.truncate !== null) body = body.slice(0, Math.max(0, req.truncate - specials));
  const tokens = req.addSpecialTokens ? runner.withSpecials(body) : body;
  return tokens;
}

export function registerClassifyRoute(app: FastifyInstance, deps: ServerDeps, side: SideModels): void {
  app.post("/classify", async (req: FastifyRequest, reply: FastifyReply) => {
    const body = req.body as {model?: unknown; messages?: unknown} | null;
    if (body && typeof body === "object" && body.messages !== undefined) {
      throw invalidField("messages", "chat messages are not accepted by POST /classify; send the text in `input`");
    }
    const runner = side.pick<ClassifierRunner>("classifier", body?.model);
    const request = decodeClassify(req.body, {inputLimit: runner.inputLimit, vocabularySize: runner.vocabularySize});
    const tokens = request.inputs.map((input) => tokensOf(runner, input, request));
    tokens.forEach((t, i) => {
      const at = tokens.length === 1 ? "input" : `input[${i}]`;
      if (t.length === 0) throw invalidField(at, "holds no tokens after truncation");
      if (t.length > runner.inputLimit) {
        throw invalidField(at, `is ${t.length} tokens; ${runner.id} reads at most ${runner.inputLimit} tokens per input (special tokens included); ` +
          "shorten it or set truncate_prompt_tokens");
      }
    });
    const abort = hangUpSignal(req, reply);
    let scores: number[][];
    try {
      scores = await runner.score(tokens, {batch: deps.config.npuEmbBatch, signal: abort.signal});
    } catch (e) {
      if (abort.signal.aborted && !(e instanceof ApiError)) {
        throw new ApiError("client_closed", "the client closed the connection; the classification was cancelled");
      }
      throw e;
    }
    const labels = runner.labels;
    const promptTokens = tokens.reduce((a, t) => a + t.length, 0);
    return {
      id: `classify-${randomBytes(12).toString("hex")}`,
      object: "list",
      created: Math.floor(Date.now() / 1000),
      model: runner.id,
      data: scores.map((raw, index) => {
        const probs = request.useActivation ? activate(raw, runner.activation) : raw;
        let best = 0;
        for (let k = 1; k < raw.length; k++) if (raw[k]! > raw[best]!) best = k;
        return {index, label: labels[best] ?? String(best), probs, num_classes: raw.length};
      }),
      usage: {prompt_tokens: promptTokens, total_tokens: promptTokens, completion_tokens: 0},
    };
  });
}
