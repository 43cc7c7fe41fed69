// The side routes decode by hand; /openapi.json documents them with zod restatements (src/api/openapi/side-schemas.ts).
// Here both give the same verdict on real and bad bodies, so the document does not drift from the decoders.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import type {z} from "zod";
import {classifyRequestSchema, decideRequestSchema, embeddingsRequestSchema, imageGenerationRequestSchema, moderationRequestSchema,
  rerankRequestSchema} from "../../../../src/api/openapi/side-schemas.ts";
import {COMMON_FIELDS, IMAGE_SIZES, readImageOptions, readPrompt, refuseUnknown, type Fields} from "../../../../src/api/side/images/fields.ts";
import {decodeEmbeddings} from "../../../../src/api/side/embeddings/decode.ts";
import {decodeClassify} from "../../../../src/api/side/classify/decode.ts";
import {decodeRerank} from "../../../../src/api/side/rerank/route.ts";
import {decodeModeration} from "../../../../src/api/side/moderations/route.ts";
import {decodeDecide} from "../../../../src/api/side/decide/route.ts";

function agree(name: string, schema: z.ZodType, decode: (b: unknown) => unknown, good: unknown[], bad: unknown[]): void {
  test(name, () => {
    for (const b of good) {
      assert.doesNotThrow(() => decode(b), `decoder refuses ${JSON.stringify(b)}`);
      assert.ok(schema.safeParse(b).success, `schema refuses ${JSON.stringify(b)}`);
    }
    for (const b of bad) {
      assert.throws(() => decode(b), `decoder accepts ${JSON.stringify(b)}`);
      assert.ok(!schema.safeParse(b).success, `schema accepts ${JSON.stringify(b)}`);
    }
  });
}

describe("side-route schemas agree with their decoders", () => {
  agree("embeddings", embeddingsRequestSchema, (b) => decodeEmbeddings(b, 768),
    [{model: "e", input: "hi"}, {model: "e", input: ["a", "b"], dimensions: 64, encoding_format: "base64"},
      {model: "e", input: "q", prompt_name: "query", instruction: "Find it"}],
    [{model: "e"}, {model: "", input: "x"}, {model: "e", input: []}, {model: "e", input: [""]}, {model: "e", input: "x", dimensions: 8},
      {model: "e", input: "x", encoding_format: "hex"}, {model: "e", input: "x", extra: 1}, {model: "e", input: [1, 2]}]);
  agree("classify", classifyRequestSchema, (b) => decodeClassify(b, {inputLimit: 512, vocabularySize: 1000}),
    [{model: "c", input: "hi"}, {model: "c", input: [1, 2, 3]}, {model: "c", input: ["a", [4, 5]], truncate_prompt_tokens: -1}],
    [{model: "c"}, {model: "c", input: ""}, {model: "c", input: []}, {model: "c", input: "x", use_activation: "yes"},
      {model: "c", input: "x", truncate_prompt_tokens: 0}, {model: "c", input: "x", other: true}]);
  agree("rerank", rerankRequestSchema, decodeRerank,
    [{query: "q", documents: ["a", {text: "b"}]}, {model: "r", query: "q", documents: ["a"], top_n: 1, return_documents: true}],
    [{query: " ", documents: ["a"]}, {query: "q", documents: []}, {query: "q", documents: [3]}, {query: "q", documents: ["a"], top_n: 0}]);
  agree("moderations", moderationRequestSchema, decodeModeration,
    [{input: "text"}, {input: ["a", "b"]}, {input: [{type: "text", text: "a"}]}, {messages: [{role: "user", content: "hi"}]}],
    [{}, {input: "a", messages: [{role: "user", content: "x"}]}, {input: []}, {input: 5}, {messages: []}, {input: "a", strict: "no"}]);
  agree("decide", decideRequestSchema, decodeDecide,
    [{state: "s", questions: {q: {type: "noul", instructions: "Is it?"}}},
      {state: {a: 1}, questions: {c: {type: "choice", instructions: "Which?", criteria: {x: null, y: "why"}}}},
      {state: [1], questions: {s: {type: "score", instructions: "How?", criteria: ["low", "high"]}}}],
    [{state: "s"}, {state: "", questions: {q: {type: "noul", instructions: "x"}}}, {state: "s", questions: {}},
      {state: "s", questions: {q: {type: "maybe", instructions: "x"}}}, {state: 5, questions: {q: {type: "noul", instructions: "x"}}},
      {state: "s", questions: {q: {type: "noul", instructions: " "}}}, {state: "s", extra: 1, questions: {q: {type: "noul", instructions: "x"}}}]);
  agree("images/generations", imageGenerationRequestSchema, (b) => {
    refuseUnknown(b as Fields, COMMON_FIELDS);
    readPrompt(b as Fields, true);
    return readImageOptions(b as Fields, IMAGE_SIZES);
  },
    [{prompt: "a cat"}, {prompt: "a cat", model: "dall-e-3", size: "1024x576", n: 4, response_format: "url", output_format: "png", seed: 0,
      quality: "high", style: "vivid", background: "opaque", steps: 4, num_inference_steps: 4, stream: false, user: "u"}, {prompt: "x", size: "auto"}],
    [{}, {prompt: " "}, {prompt: "x", size: "300x300"}, {prompt: "x", n: 5}, {prompt: "x", n: 0}, {prompt: "x", quality: "low"},
      {prompt: "x", steps: 3}, {prompt: "x", seed: -1}, {prompt: "x", seed: 4294967296}, {prompt: "x", output_format: "jpeg"},
      {prompt: "x", background: "transparent"}, {prompt: "x", stream: true}, {prompt: "x", guidance: 2}, {prompt: "x", response_format: "png"}]);
});
