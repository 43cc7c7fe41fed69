// A call syntax read from a template that no family file knows. The template is asked to render assistant turns
// holding probe calls of known names and arguments (one call with two parameters, then two calls), and the text
// around the known pieces is taken as the markers: JSON arguments inside a JSON object that also names the call
// are the json shape, JSON arguments after the name in markup the named shape, and raw parameter values between
// markers the xml shape. A render that fits none of them gives no syntax, with the reason, and the template stays
// generic (calls taught in a system message). llama.cpp derives its parsers from templates the same way (its
// common/chat autoparser compares renders); this one only fills the shapes svc already parses and constrains.

import type {CallSyntax, JsonCallSyntax, NamedCallSyntax, PythonicCallSyntax, XmlCallSyntax} from "../core/call-syntax.ts";
import type {TemplateMessage} from "../core/messages.ts";
import {unusableSyntax} from "../syntax/index.ts";
import type {Renders} from "./template-probes.ts";

const QUESTION: TemplateMessage = {role: "user", content: "svc probe question"};
const NAME = "svc_probe_fn";
const SECOND_NAME = "svc_probe_other_fn";
const KEY = "svc_probe_key";
const SECOND_KEY = "svc_probe_other_key";
const VALUE = "svc_probe_value";
const SECOND_VALUE = "svc_probe_second_value";
/** Text an assistant turn holds in the reference render: ends in a character no marker is likely to end in. */
const TEXT = "svc probe text Q";

/** The syntax and whether the template writes several calls in a turn; or why no syntax could be read. */
export type Derivation = {syntax: CallSyntax; parallel: boolean} | {syntax: null; reason: string};

interface ProbeCall {
  name: string;
  args: Record<string, string | number>;
}

/** The id of the i-th probe call: nine alphanumerics, as Mistral templates require. */
const PROBE_ID = (i: number): string => `svcprobe${i + 1}`;

/**
 * The assistant turn that holds `calls`, without the turn's own opening and closing (learnt from a text turn). `t`
 * hands a call turn to the template the way the template takes it (probeToolCall found that: ChatTemplate keeps it).
 */
function callRegion(t: Renders, calls: ProbeCall[]): string | null {
  const opts = {addGenerationPrompt: false, continueFinalMessage: false};
  const turn = (m: TemplateMessage): string | null => {
    try {
      const before = t.render([QUESTION], opts).text;
      const after = t.render([QUESTION, m], opts).text;
      return after.startsWith(before) ? after.slice(before.length) : null;
    } catch {
      return null;
    }
  };
  const text = turn({role: "assistant", content: TEXT});
  const call = turn({role: "assistant", content: "",
    tool_calls: calls.map((c, i) => ({id: PROBE_ID(i), type: "function" as const,
      function: {name: c.name, arguments: JSON.stringify(c.args)}}))});
  if (text === null || call === null) return null;
  const at = text.indexOf(TEXT);
  if (at < 0) return call;
  const head = text.slice(0, at);
  const tail = text.slice(at + TEXT.length);
  let start = 0;
  while (start < head.length && head[start] === call[start]) start++;
  let end = call.length;
  for (let i = tail.length - 1; i >= 0 && end > start && tail[i] === call[end - 1]; i--) end--;
  return call.slice(snapBack(call, start), snapOn(call, end));
}

/** The end of the JSON value that starts at `from` (an object or array), or -1 when it does not close. */
function jsonEnd(s: string, from: number): number {
  let depth = 0;
  let inString = false;
  for (let i = from; i < s.length; i++) {
    const c = s[i]!;
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    } else if (c === "{" || c === "[") {
      depth++;
    } else if (c === "}" || c === "]") {
      if (--depth === 0) return i + 1;
    }
  }
  return -1;
}

/** Every JSON object in `s`, with where it starts and ends. */
function jsonObjects(s: string): {start: number; end: number; value: Record<string, unknown>}[] {
  const out: {start: number; end: number; value: Record<string, unknown>}[] = [];
  for (let i = s.indexOf("{"); i >= 0; i = s.indexOf("{", i + 1)) {
    const end = jsonEnd(s, i);
    if (end < 0) continue;
    try {
      const value = JSON.parse(s.slice(i, end)) as unknown;
      if (value !== null && typeof value === "object" && !Array.isArray(value)) out.push({start: i, end, value: value as Record<string, unknown>});
    } catch {
      // not JSON: markup with braces
    }
  }
  return out;
}

const sameArgs = (v: unknown, args: Record<string, string | number>): boolean => {
  const parsed = typeof v === "string" ? tryParse(v) : v;
  return parsed !== null && typeof parsed === "object" && JSON.stringify(parsed) === JSON.stringify(args);
};

function tryParse(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}

function commonPrefix(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return a.slice(0, i);
}

function commonSuffix(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[a.length - 1 - i] === b[b.length - 1 - i]) i++;
  return a.slice(a.length - i);
}

/** A marker as the parsers compare it: surrounding whitespace is layout. */
const marker = (s: string): string => s.trim();

/**
 * The tag (`<...>`, `[...]`, as special tokens are written) that a cut before `text[i]` would split, as [start, end),
 * or null when the cut falls between tags or in plain text. Comparing renders character by character stops inside
 * a tag when two tags share a beginning or an end (`<|tool_calls_section_begin|>`, `<|tool_call_begin|>`).
 */
function tagAround(text: string, i: number): [number, number] | null {
  for (const [open, close] of [["<", ">"], ["[", "]"]] as const) {
    const a = text.lastIndexOf(open, i - 1);
    if (a < 0) continue;
    const b = text.indexOf(close, a);
    if (b < 0 || b < i || b - a > 80 || text.slice(a, b).includes("\n") || text.slice(a + 1, b).includes(open)) continue;
    if (a < i && i <= b) return [a, b + 1];
  }
  return null;
}

/** A cut moved back to the start of the tag it splits. */
const snapBack = (text: string, i: number): number => tagAround(text, i)?.[0] ?? i;
/** A cut moved on to the end of the tag it splits. */
const snapOn = (text: string, i: number): number => tagAround(text, i)?.[1] ?? i;

/** The first tag of a text that starts with one (a closing marker followed by the end of the turn), else the text. */
function firstTag(text: string): string {
  const t = text.trim();
  const m = /^(<[^<>\n]{1,80}>|\[[^[\]\n]{1,80}\])/.exec(t);
  return m ? m[1]! : t;
}

/** The last tag of a text that ends with one (an opening marker after other layout), else the text. */
function lastTag(text: string): string {
  const t = text.trim();
  const m = /(<[^<>\n]{1,80}>|\[[^[\]\n]{1,80}\])$/.exec(t);
  return m ? m[1]! : t.split(/\s+/).pop()!;
}

/**
 * What wraps each call and what wraps them all, from the text before the first call (`before`), after the last
 * (`after`) and between two calls (`between`, which holds one call's end, the separator and the next call's start).
 */
function splitSection(before: string, after: string, between: string | null): {section: {open: string; close: string} | null; open: string;
  close: string; separator: string} | null {
  // One call only (the template refuses two): no section can be told apart; the close is the first marker after it.
  if (between === null) {
    const close = firstTag(after);
    return marker(before) === "" && close === "" ? null : {section: null, open: before, close, separator: ""};
  }
  // The part of `before` that `between` repeats opens each call; the rest opens the section. Neither cut splits a tag.
  const shared = commonSuffix(before, between);
  const open = before.slice(snapOn(before, before.length - shared.length));
  const rest = between.slice(0, between.length - open.length);
  const close = after.slice(0, snapBack(after, commonPrefix(after, rest).length));
  if (marker(open) === "" && marker(close) === "") return null;
  const separator = between.slice(close.length, between.length - open.length);
  const sectionOpen = before.slice(0, before.length - open.length);
  const sectionClose = after.slice(close.length);
  // What follows the section's close in the render is the end of the turn, not the section's.
  const section = marker(sectionOpen) !== "" || marker(sectionClose) !== "" ? {open: marker(sectionOpen), close: firstTag(sectionClose)} : null;
  return {section, open, close, separator};
}

const BOTH = {[KEY]: VALUE, [SECOND_KEY]: SECOND_VALUE};

function deriveJson(one: string, two: string | null): JsonCallSyntax | null {
  const call = jsonObjects(one).find((o) => Object.values(o.value).includes(NAME) && Object.values(o.value).some((v) => sameArgs(v, BOTH)));
  if (!call) return null;
  const nameKey = Object.keys(call.value).find((k) => call.value[k] === NAME)!;
  const argsKey = Object.keys(call.value).find((k) => k !== nameKey && sameArgs(call.value[k], BOTH))!;
  const before = one.slice(0, call.start);
  const list = /\[\s*$/.test(before);
  // The marker right before the calls opens them (what comes earlier is the turn's other layout: an empty thinking
  // block, a header); the first one after them closes them (what follows ends the turn).
  const opener = before.replace(/\[\s*$/, "").trim() === "" ? "" : lastTag(before.replace(/\[\s*$/, ""));
  const close = firstTag(list ? one.slice(call.end).replace(/^\s*\]/, "") : one.slice(call.end));
  const objects = two === null ? [] : jsonObjects(two).filter((o) => [NAME, SECOND_NAME].some((n) => Object.values(o.value).includes(n)));
  if (two !== null && objects.length < 2) return null;
  const gap = two === null ? "" : two.slice(objects[0]!.end, objects[1]!.start);
  if (opener === "") {
    // Calls that start the content, as a bare object (Llama 3's form): one call per reply.
    if (list) return null;
    return {shape: "json", opener: null, start: {pieces: ["{", JSON.stringify(nameKey)], consumed: false}, list: false, close: "",
      nameKey, argsKey, pad: ""};
  }
  // Without a list, each call has its opener again, or the calls follow each other inside one (MiniMax M1).
  if (!list && !gap.includes(opener) && gap.trim() !== "") return null;
  return {shape: "json", opener, list, close, nameKey, argsKey, pad: list ? "" : "\n"};
}

function deriveNamed(one: string, two: string | null): NamedCallSyntax | null {
  const args = jsonObjects(one).find((o) => sameArgs(o.value, BOTH));
  const at = one.indexOf(NAME);
  if (!args || at < 0 || at > args.start) return null;
  let nameEnd = one.slice(at + NAME.length, args.start);
  // Mistral writes the call's id between the name and the arguments, behind a marker of its own.
  let idMarker: string | undefined;
  const id = nameEnd.indexOf(PROBE_ID(0));
  if (id >= 0) {
    idMarker = marker(nameEnd.slice(0, id));
    nameEnd = nameEnd.slice(id + PROBE_ID(0).length);
  }
  // Kimi writes the call's index after its name: `name:0`.
  const nameIndex = nameEnd.startsWith(":0") && (two === null || two.includes(`${SECOND_NAME}:1`));
  if (nameIndex) nameEnd = nameEnd.slice(2);
  let between: string | null = null;
  if (two !== null) {
    const first = two.indexOf(NAME);
    const second = two.indexOf(SECOND_NAME);
    const firstArgs = jsonObjects(two).find((o) => o.start > first && o.start < second);
    if (first < 0 || second < 0 || !firstArgs) return null;
    between = two.slice(firstArgs.end, second);
  }
  const split = splitSection(one.slice(0, at), one.slice(args.end), between);
  if (!split) return null;
  return {shape: "named", section: split.section, open: marker(split.open), namePrefix: "", nameIndex, ...(idMarker ? {idMarker} : {}), nameEnd,
    argsEnd: "", close: marker(split.close), separator: split.separator};
}

/** Python-style calls in one list (LFM2.5): `OPEN[NAME(KEY='VALUE', ...)]CLOSE`, strings in either quote. */
function derivePythonic(one: string): PythonicCallSyntax | null {
  const q = `(['"])`;
  const call = new RegExp(`\\[${NAME}\\(${KEY}=${q}${VALUE}\\1, ?${SECOND_KEY}=${q}${SECOND_VALUE}\\2\\)\\]`).exec(one);
  if (call === null) return null;
  const open = marker(one.slice(0, call.index));
  const close = marker(one.slice(call.index + call[0].length));
  return open === "" || close === "" ? null : {shape: "pythonic", open, close};
}

/** `keyEnd` when a non-string value is written after another marker than a string (DeepSeek's DSML: string="false"). */
function jsonKeyEnd(numeric: string | null, keyEnd: string): XmlCallSyntax["keyEnd"] {
  if (numeric === null) return keyEnd;
  const k = numeric.indexOf(KEY);
  const v = numeric.indexOf("7", k + KEY.length);
  if (k < 0 || v < 0) return keyEnd;
  const other = numeric.slice(k + KEY.length, v);
  return other === keyEnd || marker(other) === "" ? keyEnd : {string: keyEnd, json: other};
}

function deriveXml(one: string, two: string | null, numeric: string | null): XmlCallSyntax | null {
  const k1 = one.indexOf(KEY);
  // The name as written right before the parameters (a template may also name the call earlier, in a header).
  const at = one.lastIndexOf(NAME, k1);
  const v1 = one.indexOf(VALUE, k1);
  const k2 = one.indexOf(SECOND_KEY, v1);
  const v2 = one.indexOf(SECOND_VALUE, k2);
  if ([at, k1, v1, k2, v2].some((i) => i < 0)) return null;
  const keyEnd = one.slice(k1 + KEY.length, v1);
  if (keyEnd !== one.slice(k2 + SECOND_KEY.length, v2) || marker(keyEnd) === "") return null;
  const afterName = one.slice(at + NAME.length, k1);
  const afterValue = one.slice(v1 + VALUE.length, k2);
  // What opens a key is what both gaps end with, from its last line on (the newline before it is the previous piece's),
  // and never from inside a tag.
  const shared = commonSuffix(afterName, afterValue);
  const fromLine = shared.includes("\n") ? shared.slice(shared.lastIndexOf("\n") + 1) : shared;
  const keyOpen = afterValue.slice(snapOn(afterValue, afterValue.length - fromLine.length));
  if (marker(keyOpen) === "") return null;
  const nameEnd = afterName.slice(0, afterName.length - keyOpen.length);
  const valueEnd = afterValue.slice(0, afterValue.length - keyOpen.length);
  const tail = one.slice(v2 + SECOND_VALUE.length);
  if (!tail.startsWith(valueEnd)) return null;
  let between: string | null = null;
  if (two !== null) {
    const first = two.indexOf(NAME);
    const second = two.indexOf(SECOND_NAME);
    const lastValue = two.lastIndexOf(VALUE, second);
    if (first < 0 || second < 0 || lastValue < first) return null;
    between = two.slice(lastValue + VALUE.length + valueEnd.length, second);
  }
  const split = splitSection(one.slice(0, at), tail.slice(valueEnd.length), between);
  if (!split) return null;
  return {shape: "xml", section: split.section, open: split.open.trimStart(), nameEnd, keyOpen, keyEnd: jsonKeyEnd(numeric, keyEnd), valueEnd,
    close: split.close.trimEnd(), separator: split.separator};
}

/** Whether a marker holds a probe's name, key, value or id: then the render was not cut where it should have been. */
function holdsProbeText(syntax: CallSyntax): boolean {
  const {shape: _shape, ...markers} = syntax;
  return /svc_?probe/.test(JSON.stringify(markers));
}

/**
 * The call syntax `t` writes, read from its renders; `input` is how the template takes a call turn (probeToolCall).
 * Tries the pythonic, json, named and xml shapes in that order and returns the first whose markers the renders bear out.
 */
export function deriveCallSyntax(t: Renders): Derivation {
  const one = callRegion(t, [{name: NAME, args: BOTH}]);
  if (one === null || !one.includes(NAME)) return {syntax: null, reason: "the template does not render a call's name in an assistant turn"};
  // A template may refuse two calls in a turn (Llama 3.1 raises): the syntax is then read from one call alone.
  const rendered = callRegion(t, [{name: NAME, args: {[KEY]: VALUE}}, {name: SECOND_NAME, args: {[SECOND_KEY]: SECOND_VALUE}}]);
  const two = rendered !== null && rendered.includes(SECOND_NAME) ? rendered : null;
  const numeric = callRegion(t, [{name: NAME, args: {[KEY]: 7}}]);
  const syntax = derivePythonic(one) ?? deriveJson(one, two) ?? deriveNamed(one, two) ?? deriveXml(one, two, numeric);
  if (!syntax) {
    return {syntax: null, reason: `the rendered call fits none of the json, named, xml and pythonic shapes: ${JSON.stringify(one.slice(0, 200))}`};
  }
  const missing = unusableSyntax(syntax);
  if (missing) return {syntax: null, reason: `${missing}: ${JSON.stringify(one.slice(0, 200))}`};
  if (holdsProbeText(syntax)) {
    return {syntax: null, reason: `the rendered call's markers could not be told apart from its name and arguments: ${JSON.stringify(one.slice(0, 200))}`};
  }
  return {syntax, parallel: two !== null};
}
