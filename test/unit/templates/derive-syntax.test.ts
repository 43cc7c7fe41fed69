// The call syntax read from a template's own renders (src/templates/derive-syntax.ts), on the 70 bundled templates
// of llama.cpp: for every template a family file serves, the syntax derived with the family file out of the way must
// parse the calls the family writes (one call with nested arguments, two calls where the family writes several, a
// call after text), as the family's own parser does. A template whose syntax cannot be derived is listed with why;
// a template no family file knows is served by the derived syntax or stays generic with the reason /health gives.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {getLlama, LlamaLogLevel, type Llama} from "node-llama-cpp";
import type {CallSyntax} from "../../../src/core/call-syntax.ts";
import {nativeJinja} from "../../../src/engine/llama/internals.ts";
import {writeCalls} from "../../../src/pipeline/past-calls.ts";
import {ReplyParser} from "../../../src/pipeline/reply/parser.ts";
import type {ReplyPart} from "../../../src/pipeline/reply/types.ts";
import {ChatTemplate} from "../../../src/templates/chat-template.ts";
import {bundledTemplate, bundledTemplateNames} from "../../fixtures/templates/bundled.ts";

/**
 * Templates served by a family file whose syntax is not read from renders, and why. (The families with a parser of
 * their own, gpt-oss's harmony channels and Gemma 4's argument syntax, write no calls in a shape to compare with: they
 * are left out below.)
 */
const NOT_DERIVED: Record<string, RegExp> = {
  // Its template opens the calls' section and never closes it (the family file knows the model's closing marker).
  "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": /the calls' section has no closing marker/,
  // The call's id comes before its name (the family file's leadId); the derivation reads an id only after the name.
  "upstage-Solar-Open-100B.jinja": /could not be told apart from its name and arguments/,
  // The templates never show an earlier turn's calls (svc writes them itself: pipeline/past-calls.ts).
  "ibm-granite-granite-3.3-2B-Instruct.jinja": /does not render a call's name/,
  "CohereForAI-c4ai-command-r-plus-tool_use.jinja": /does not render a call's name/,
  // Each call is a message whose header names the tool, ended by the message's end marker after the calls' block: the
  // renders show a block that nothing closes (the family file's recipients syntax knows the messages).
  "muse-glimmer.jinja": /the calls' section has no closing marker/,
  // Each parameter is an element named after it: no marker stands between a key and its value that renders could show.
  "MiniMax-M3.jinja": /fits none of the json, named, xml and pythonic shapes/,
  // A call is a message `>>>NAME\n{...}`: its name is the header, which renders alone do not tell from text.
  "meetkai-functionary-medium-v3.2.jinja": /fits none of the json, named, xml and pythonic shapes/,
  "LFM2-8B-A1B.jinja": /does not render a call's name/,
  "LFM2.5-Instruct.jinja": /does not render a call's name/,
};

/**
 * Templates whose derived syntax reads its renders but not every call the family writes, and why: the family file is
 * needed. The test checks that the derived syntax does fail on them, so the list cannot outlive the reason.
 */
const DERIVED_DIFFERENTLY: Record<string, string> = {
  "Kimi-K3.jinja": "its markers carry the call's number and each value's JSON type (placeholders in the family file); " +
    "renders of fixed probe calls show them as fixed text (index=\"1\", type=\"number\")",
};

const TOOLS = [{name: "get_weather", parameters: {type: "object", properties: {city: {type: "string"}, days: {type: "integer"}}}},
  {name: "plan_trip", parameters: {type: "object", properties: {route: {type: "object"}, stops: {type: "array"}}}}];

interface Call {
  name: string;
  args: Record<string, unknown>;
}

const ONE: Call[] = [{name: "plan_trip", args: {route: {from: "Oslo", legs: [{to: "Bergen", km: 463}]}, stops: ["Voss", "Myrdal"]}}];
const TWO: Call[] = [{name: "get_weather", args: {city: "Paris", days: 3}}, {name: "get_weather", args: {city: "Lyon"}}];

/** The calls `syntax` reads from `text`, with their arguments parsed; throws when a call did not close. */
function parse(syntax: CallSyntax, text: string): Call[] {
  const p = new ReplyParser({calls: syntax, tools: TOOLS, reasoning: null});
  const parts: ReplyPart[] = [...p.push(text), ...p.finish()];
  const calls: {name: string; args: string}[] = [];
  for (const part of parts) {
    if (part.kind === "call_start") calls[part.index] = {name: part.name, args: ""};
    else if (part.kind === "call_args") calls[part.index]!.args += part.text;
    else if (part.kind === "malformed") throw new Error(`malformed calls in ${JSON.stringify(text)}`);
  }
  return calls.map((c) => ({name: c.name, args: JSON.parse(c.args === "" ? "{}" : c.args) as Record<string, unknown>}));
}

/** The calls as `syntax` writes them (the layout the family's grammar writes). */
function written(syntax: CallSyntax, calls: Call[]): string {
  const pieces = writeCalls(syntax, calls.map((c) => ({name: c.name, args: JSON.stringify(c.args)})))!;
  return pieces.map((p) => ("client" in p ? p.client : p.syntax)).join("");
}

let llama: Llama;
const templates = new Map<string, ChatTemplate>();
before(async () => {
  llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
  const native = nativeJinja(llama);
  for (const name of bundledTemplateNames()) {
    templates.set(name, ChatTemplate.create(bundledTemplate(name), {bosToken: "<s>", eosToken: "</s>", origin: name, native}));
  }
});
after(async () => {
  await llama?.dispose();
});

describe("call syntaxes derived from the bundled templates", () => {
  test("with the family file out of the way, the derived syntax parses the calls the family writes", () => {
    let checked = 0;
    for (const [name, t] of templates) {
      const own = t.family.calls;
      if (own === null || own.shape === "custom" || t.family.id === "derived") continue;
      const derivation = t.deriveSyntax();
      const exception = NOT_DERIVED[name];
      if (exception) {
        assert.equal(derivation.syntax, null, `${name}: listed as not derived, but it derives`);
        assert.match((derivation as {reason: string}).reason, exception, name);
        continue;
      }
      assert.ok(derivation.syntax, `${name} (${t.family.id}): ${(derivation as {reason: string}).reason}`);
      const sets = t.family.parallelCalls && derivation.parallel ? [ONE, TWO] : [ONE];
      if (DERIVED_DIFFERENTLY[name]) {
        assert.ok(sets.some((calls) => {
          try {
            return JSON.stringify(parse(derivation.syntax, written(own, calls))) !== JSON.stringify(calls);
          } catch {
            return true;
          }
        }), `${name}: listed as derived differently, but the derived syntax reads the family's calls`);
        continue;
      }
      for (const calls of sets) {
        const text = written(own, calls);
        assert.deepEqual(parse(own, text), calls, `${name}: the family's own parser reads what it writes`);
        assert.deepEqual(parse(derivation.syntax, text), calls, `${name} (${t.family.id}): the derived syntax reads ${JSON.stringify(text)}`);
        // After text, as a model writes a call once it has said something.
        if (own.shape !== "json" || own.opener !== null) {
          assert.deepEqual(parse(derivation.syntax, `Let me check.\n${text}`), calls, `${name}: a call after text`);
        }
      }
      checked++;
    }
    // The 70 bundled templates less those read in the generic form, those with a parser of their own (gpt-oss, Gemma 4)
    // and those listed above: a change here means a template moved between these groups.
    assert.equal(checked, 53, `templates checked: ${checked}`);
  });

  test("a template no family file knows is served by its derived syntax, or stays generic saying why", () => {
    for (const [name, t] of templates) {
      if (t.family.id === "derived") {
        assert.ok(t.derivation?.syntax, name);
        const syntax = t.family.calls!;
        for (const calls of t.family.parallelCalls ? [ONE, TWO] : [ONE]) {
          assert.deepEqual(parse(syntax, written(syntax, calls)), calls, `${name}: reads the calls it writes`);
        }
      } else if (t.family.id === "generic") {
        // Either the template renders no tools (nothing to derive) or the derivation says why it failed.
        if (t.supportsTools && t.derivation !== null) assert.ok(!t.derivation.syntax && t.derivation.reason.length > 0, name);
      } else {
        assert.equal(t.derivation, null, `${name}: a family file matched, so nothing was derived`);
      }
    }
  });
});
