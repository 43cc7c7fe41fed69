// The code examples of README.md and docs/*.md, as test/e2e/docs-examples.test.ts runs them: which fenced blocks are
// examples, what their marker comments and `npm start` lines ask of the server, and the script each block becomes.
// Pure (no server, no processes), so the rule is read in one place; the header of docs-examples.test.ts states it.

import {readFileSync} from "node:fs";
import {join} from "node:path";
import {docPages} from "../../scripts/doc-links.ts";

/** The address the docs give for the server, with or without the scheme. */
const ADDRESS = /(?:https?:\/\/)?(?:127\.0\.0\.1|localhost):8731/g;

export interface Example {
  /** `page:line` of the opening fence. */
  id: string;
  page: string;
  line: number;
  lang: "sh" | "js";
  /** The block's text without its `npm start` lines. */
  code: string;
  /** Server settings: the block's `SVC_*=value npm start` line and the marker's `SVC_*=value` directives. */
  settings: Record<string, string>;
  /** Why the block is not run (`skip:` in its marker), or null. */
  skip: string | null;
  /** WAV files of spoken test audio the block reads, made in its working directory (`audio:`). */
  audio: string[];
  /** Sentiment classifier folders the server serves as own fine-tunes (`classifier:`), by folder name. */
  classifiers: string[];
  /** PNG pictures the block reads, made in its working directory (`picture:`). */
  pictures: string[];
  /** Servers the block needs beyond settings: `vision` (the main model reads pictures: SVC_MMPROJ with the test projector),
   * `embedder` (embeddingnx-2 on the generated test embedding model and its projector), `painter` (nximg2-klein-4b on
   * the generated test image model). */
  needs: ("vision" | "embedder" | "painter")[];
}

const SHELL = new Set(["sh", "bash", "shell"]);
const SCRIPT = new Set(["ts", "js", "typescript", "javascript"]);
const MARKER = /^<!--\s*example:(.*?)-->\s*$/;
const START_LINE = /^\s*((?:[A-Z][A-Z0-9_]*=\S*\s+)*)npm start\b.*$/;

/**
 * Reads a marker's directives (separated by `;`) into the example. `skip:` comes last and takes the rest of the
 * marker as its reason (which may hold `;`). Unknown directives are an error, not ignored.
 */
function applyMarker(ex: Example, body: string): void {
  const skip = /(?:^|;)\s*skip:(.*)$/s.exec(body);
  if (skip) {
    ex.skip = skip[1]!.trim();
    if (!ex.skip) throw new Error(`${ex.id}: a skip marker must say why`);
    body = body.slice(0, skip.index);
  }
  for (const raw of body.split(";").map((d) => d.trim()).filter(Boolean)) {
    let m: RegExpExecArray | null;
    if ((m = /^audio:\s*(\S+)$/.exec(raw))) ex.audio.push(m[1]!);
    else if ((m = /^classifier:\s*(\S+)$/.exec(raw))) ex.classifiers.push(m[1]!);
    else if ((m = /^picture:\s*(\S+\.png)$/.exec(raw))) ex.pictures.push(m[1]!);
    else if (raw === "vision" || raw === "embedder" || raw === "painter") ex.needs.push(raw);
    else {
      for (const word of raw.split(/\s+/)) {
        const kv = /^(SVC_[A-Z0-9_]+)=(\S*)$/.exec(word);
        if (!kv) throw new Error(`${ex.id}: marker directive "${raw}" is not skip:, audio:, classifier:, picture:, vision, embedder, painter or SVC_NAME=value`);
        ex.settings[kv[1]!] = kv[2]!;
      }
    }
  }
}

/** The settings an `npm start` line gives (`A=1 B=2 npm start`). */
function startSettings(assignments: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of assignments.trim().split(/\s+/).filter(Boolean)) {
    const i = a.indexOf("=");
    out[a.slice(0, i)] = a.slice(i + 1);
  }
  return out;
}

/** Shell text without its `#` comments (a comment that mentions the address does not make a block an example). */
function withoutComments(code: string): string {
  return code.split("\n").map((l) => l.replace(/(^|\s)#.*$/, "")).join("\n");
}

/** Every example of one page's text. A marker before a block that is not an example is an error. */
export function examplesOf(page: string, text: string): Example[] {
  const lines = text.split("\n");
  const out: Example[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    const body = lines.slice(i + 1, end);
    const lang = open[1]!.toLowerCase();
    const marker = i > 0 ? MARKER.exec(lines[i - 1]!.trim()) : null;
    const id = `${page}:${i + 1}`;
    const code = body.join("\n");
    const isExample = (SHELL.has(lang) && new RegExp(ADDRESS.source).test(withoutComments(code))) || SCRIPT.has(lang);
    if (!isExample) {
      if (marker) throw new Error(`${id}: an example marker before a block that is not an example`);
      i = end;
      continue;
    }
    const ex: Example = {id, page, line: i + 1, lang: SHELL.has(lang) ? "sh" : "js", code: "", settings: {}, skip: null, audio: [], classifiers: [], pictures: [], needs: []};
    const kept: string[] = [];
    for (const l of body) {
      const start = ex.lang === "sh" ? START_LINE.exec(l) : null;
      if (start) Object.assign(ex.settings, startSettings(start[1]!));
      else kept.push(l);
    }
    ex.code = kept.join("\n");
    if (marker) applyMarker(ex, marker[1]!);
    out.push(ex);
    i = end;
  }
  return out;
}

/** The examples of README.md and docs/*.md, in page order. */
export function docExamples(root: string): Example[] {
  return docPages(root).flatMap((page) => examplesOf(page, readFileSync(join(root, page), "utf8")));
}

/** The docs' address replaced by the test server's (`url` is `http://127.0.0.1:PORT`). */
export function atServer(code: string, url: string): string {
  return code.replace(ADDRESS, (m) => (m.startsWith("http") ? url : url.replace(/^https?:\/\//, "")));
}

/** What each curl prints on stderr after its transfer: the HTTP status. */
export const STATUS_LINE = /^svc-example-status (\d{3})$/gm;

/**
 * A shell block as bash runs it: stop at the first failing command (also inside a pipeline), and every `curl`
 * silent but for errors, failing on an HTTP error status (the body still printed), with its status on stderr.
 */
export function shellScript(ex: Example, url: string): string {
  return [
    "set -euo pipefail",
    "curl() { command curl -sS --fail-with-body --max-time 300 -w '%{stderr}svc-example-status %{http_code}\\n' \"$@\"; }",
    atServer(ex.code, url),
    "",
  ].join("\n");
}

/**
 * A JS/TS block as a module: blocks that go on from the README's tour use `client` without making it; they get the
 * tour's two lines first (the openai import and the client), pointed at the test server.
 */
export function scriptModule(ex: Example, url: string): string {
  const code = atServer(ex.code, url);
  const needsClient = /\bclient\./.test(code) && !/\b(?:const|let|var)\s+client\b/.test(code);
  const needsImport = (needsClient || /\bOpenAI\./.test(code)) && !/^import OpenAI\b/m.test(code);
  const prelude = [
    ...(needsImport ? ['import OpenAI from "openai";'] : []),
    ...(needsClient ? [`const client = new OpenAI({baseURL: "${url}/v1", apiKey: "unused"});`] : []),
  ];
  return [...prelude, code, ""].join("\n");
}

/** Which tools a shell block calls that may be missing from a machine (the server prerequisites are node and python). */
export function toolsOf(ex: Example): string[] {
  if (ex.lang !== "sh") return [];
  return ["curl", "jq"].filter((tool) => new RegExp(`(^|[|;&(\\s])${tool}\\s`, "m").test(ex.code));
}

/** One key per distinct server setup, so blocks that ask for the same server share it. */
export function setupKey(ex: Pick<Example, "settings" | "classifiers"> & {needs?: string[]}): string {
  const settings = Object.entries(ex.settings).sort(([a], [b]) => a.localeCompare(b));
  return JSON.stringify({settings, classifiers: [...ex.classifiers].sort(), ...(ex.needs?.length ? {needs: [...ex.needs].sort()} : {})});
}
