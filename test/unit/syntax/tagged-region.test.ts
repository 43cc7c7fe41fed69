// MiniMax M3's calls read by the reply parser (src/syntax/tagged/region.ts): nested elements become JSON objects and
// arrays, values are typed by the tool's schema (or by how they look without one), every chunking reads the same, a
// broken call is reported malformed, and the markers never reach content.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {ReplyParser} from "../../../src/pipeline/reply/parser.ts";
import type {ReplyPart} from "../../../src/pipeline/reply/types.ts";
import {MINIMAX_M3_CALLS} from "../../../src/templates/families/minimax-m3.ts";

const M = MINIMAX_M3_CALLS.mark;
const TOOLS = [{name: "plan", parameters: {type: "object", properties: {
  city: {type: "string"}, zip: {type: "string"}, days: {type: "integer"}, ok: {type: "boolean"},
  opts: {type: "object", properties: {unit: {type: "string"}, alerts: {type: "array", items: {type: "boolean"}}}},
  stops: {type: "array", items: {type: "object", properties: {name: {type: "string"}, km: {type: "number"}}}},
  none: {type: "array"},
}}}];

interface Read {
  content: string;
  calls: {name: string; args: unknown; complete: boolean}[];
  malformed: number[];
}

function read(text: string, chunk: number): Read {
  const p = new ReplyParser({calls: MINIMAX_M3_CALLS, tools: TOOLS, reasoning: null});
  const parts: ReplyPart[] = [];
  for (let i = 0; i < text.length; i += chunk) parts.push(...p.push(text.slice(i, i + chunk)));
  parts.push(...p.finish());
  const out: Read = {content: "", calls: [], malformed: []};
  const args: string[] = [];
  for (const part of parts) {
    if (part.kind === "content") out.content += part.text;
    else if (part.kind === "call_start") {
      out.calls[part.index] = {name: part.name, args: null, complete: false};
      args[part.index] = "";
    } else if (part.kind === "call_args") args[part.index] += part.text;
    else if (part.kind === "call_end") {
      out.calls[part.index]!.complete = part.complete;
      out.calls[part.index]!.args = JSON.parse(args[part.index]!);
    } else if (part.kind === "malformed") out.malformed.push(...part.indices);
  }
  return out;
}

function readAll(text: string): Read {
  const whole = read(text, text.length);
  for (const n of [1, 2, 5, 13]) assert.deepEqual(read(text, n), whole, `chunks of ${n}`);
  return whole;
}

const el = (name: string, inner: string) => `${M}<${name}>${inner}${M}</${name}>`;
const call = (name: string, params: string) => `${M}<invoke name="${name}">${params}${M}</invoke>\n`;
const section = (...calls: string[]) => `${M}<tool_call>\n${calls.join("")}${M}</tool_call>`;

describe("MiniMax M3 calls (elements named after their parameters)", () => {
  test("nested objects and arrays, typed by the schema: a string that looks like a number stays a string", () => {
    const params = el("city", "Paris") + el("zip", "75001") + el("days", "2") + el("ok", "true") +
      el("opts", el("unit", "c") + el("alerts", el("item", "true") + el("item", "false"))) +
      el("stops", el("item", el("name", "Voss") + el("km", "463.5")) + el("item", el("name", "Myrdal"))) + el("none", "");
    const r = readAll(`Let me plan.\n${section(call("plan", params))}`);
    assert.equal(r.content, "Let me plan.");
    assert.deepEqual(r.calls, [{name: "plan", complete: true, args: {
      city: "Paris", zip: "75001", days: 2, ok: true, opts: {unit: "c", alerts: [true, false]},
      stops: [{name: "Voss", km: 463.5}, {name: "Myrdal"}], none: [],
    }}]);
    assert.deepEqual(r.malformed, []);
  });

  test("without a schema, values are typed by how they look; items make an array, other children an object", () => {
    const r = readAll(section(call("other", el("n", "7") + el("s", "seven") + el("l", el("item", "1") + el("item", "x")) + el("o", el("k", "true")))));
    assert.deepEqual(r.calls, [{name: "other", complete: true, args: {n: 7, s: "seven", l: [1, "x"], o: {k: true}}}]);
  });

  test("two calls, and a call with no parameters", () => {
    const r = readAll(section(call("plan", el("city", "Oslo")), call("plan", "")));
    assert.deepEqual(r.calls, [{name: "plan", complete: true, args: {city: "Oslo"}}, {name: "plan", complete: true, args: {}}]);
  });

  test("a mismatched end tag breaks the call: incomplete, malformed, and the rest of the section is dropped", () => {
    const r = readAll(`${section(call("plan", `${M}<city>Paris${M}</town>`))} after`);
    assert.equal(r.calls[0]!.complete, false);
    assert.deepEqual(r.malformed, [0]);
    assert.equal(r.content, "after");
  });

  test("a call cut short by the end of generation is incomplete; its finished parameters are kept", () => {
    const r = readAll(section(call("plan", el("city", "Paris") + `${M}<days>2`)).slice(0, -30));
    assert.equal(r.calls[0]!.complete, false);
    assert.deepEqual(r.calls[0]!.args, {city: "Paris"});
  });
});
