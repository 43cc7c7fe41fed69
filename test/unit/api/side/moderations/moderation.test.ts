// Moderation and rerank request decoding without the model: which turn `messages` judges, input forms,
// vendor model names, the guard prompt ending at "Safety:", and the rerank prompts sharing their prefix.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {ApiError} from "../../../../../src/core/errors.ts";
import {decodeModeration, isVendorModerationName} from "../../../../../src/api/side/moderations/route.ts";
import {decodeRerank} from "../../../../../src/api/side/rerank/route.ts";
import {guardPrompt} from "../../../../../src/side-models/moderation/prompt.ts";

const chars = {tokenize: (text: string) => [...text].map((c) => c.charCodeAt(0))};
const asText = (tokens: number[]) => String.fromCharCode(...tokens);

describe("moderation requests", () => {
  test("messages: the last assistant reply in its conversation, else the last user message; system turns dropped", () => {
    const reply = decodeModeration({messages: [{role: "system", content: "s"}, {role: "user", content: "q"}, {role: "assistant", content: "a"}]});
    assert.deepEqual(reply.conversations[0]!.turns, [{role: "user", content: "q"}, {role: "assistant", content: "a"}]);
    const user = decodeModeration({messages: [{role: "user", content: "q"}, {role: "assistant", content: "a"}, {role: "user", content: [{type: "text", text: "q2"}]},
      {role: "tool", content: "t"}]});
    assert.deepEqual(user.conversations[0]!.turns.at(-1), {role: "user", content: "q2"});
    assert.equal(user.conversations[0]!.turns.length, 3);
  });

  test("input: a string, strings (one result each), text parts (one result)", () => {
    assert.equal(decodeModeration({input: "a"}).conversations.length, 1);
    assert.equal(decodeModeration({input: ["a", "b"]}).conversations.length, 2);
    const parts = decodeModeration({input: [{type: "text", text: "a"}, {type: "text", text: "b"}]});
    assert.deepEqual(parts.conversations.map((c) => c.turns[0]!.content), ["a\nb"]);
    assert.throws(() => decodeModeration({input: "a", strict: 1}), (e: unknown) => e instanceof ApiError && e.status === 400 && /^strict: /.test(e.message));
  });

  test("vendor names and no model reach the loaded moderation model; other names do not", () => {
    for (const m of [undefined, null, "omni-moderation-latest", "omni-moderation-2024-09-26", "text-moderation-stable"]) assert.ok(isVendorModerationName(m), String(m));
    for (const m of ["gpt-4o", "nx3guard-stream-0.6b", 5]) assert.ok(!isVendorModerationName(m), String(m));
  });

  test("the guard prompt judges the right role and ends at the label position", () => {
    const user = guardPrompt(chars, [{role: "user", content: "hello"}]);
    const text = asText(user.tokens);
    assert.ok(text.endsWith("<|im_start|>assistant\nSafety:"));
    assert.match(text, /THE LAST USER's query/);
    assert.match(text, /USER: hello/);
    const reply = guardPrompt(chars, [{role: "user", content: "hello"}, {role: "assistant", content: "hi"}]);
    assert.match(asText(reply.tokens), /THE LAST ASSISTANT's response/);
    // Inputs judging the same role share the head up to the conversation.
    const other = guardPrompt(chars, [{role: "user", content: "bye"}]);
    assert.equal(other.headEnd, user.headEnd);
    assert.deepEqual(other.tokens.slice(0, other.headEnd), user.tokens.slice(0, user.headEnd));
  });
});

describe("rerank requests", () => {
  test("documents as strings or {text}; top_n clamps; bad fields name themselves", () => {
    const d = decodeRerank({model: "m", query: "q", documents: ["a", {text: "b"}], top_n: 5});
    assert.deepEqual(d.documents, ["a", "b"]);
    assert.equal(d.topN, 2);
    assert.throws(() => decodeRerank({query: "q", documents: ["a"], instruction: ""}), /^Error: instruction: |instruction: /);
    assert.throws(() => decodeRerank({query: "q", documents: [{txt: "a"}]}), /documents\[0\]: /);
  });
});
