// The layering rules of src/ (docs/architecture.md), as data the architecture test checks: every file's imports,
// grouped into parts, and the rules those imports must keep. Pure: it reads files and returns what breaks a rule.

import {readdirSync, readFileSync, statSync} from "node:fs";
import {dirname, join, normalize, relative, sep} from "node:path";

/** One source file: its path relative to the repository (with "/"), its text's lines, and what it imports. */
export interface SourceFile {
  path: string;
  lines: string[];
  /** Resolved repository paths of relative imports, and bare package names as written. */
  imports: string[];
}

export const MAX_FILE_LINES = 400;
export const MAX_LINE_CHARS = 160;

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^;"']*?from\s*["']([^"']+)["']|(?:^|[\s;])import\s*\(?\s*["']([^"']+)["']/g;

function posix(p: string): string {
  return p.split(sep).join("/");
}

/** Every .ts file under `dir` (repository-relative `root`), read and parsed. */
export function readSources(root: string, dir = "src"): SourceFile[] {
  const out: SourceFile[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(join(root, d)).sort()) {
      const p = join(d, name);
      if (statSync(join(root, p)).isDirectory()) walk(p);
      else if (name.endsWith(".ts")) out.push(parseSource(posix(p), readFileSync(join(root, p), "utf8")));
    }
  };
  walk(dir);
  return out;
}

export function parseSource(path: string, text: string): SourceFile {
  const imports: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2]!;
    imports.push(spec.startsWith(".") ? posix(normalize(join(dirname(path), spec))) : spec);
  }
  return {path, lines: text.split("\n"), imports};
}

/**
 * The part a file belongs to: its top-level folder under src/, except that src/api is split into its own
 * subfolders (dialects, side, fields, ops, routing, ...) and the files directly in it ("api"); files directly
 * in src/ are the composition root ("(root)").
 */
export function partOf(path: string): string | null {
  const s = path.split("/");
  if (s[0] !== "src") return null;
  if (s.length === 2) return "(root)";
  if (s[1] === "api") return s.length === 3 ? "api" : `api/${s[2]}`;
  return s[1]!;
}

export interface Edge {
  from: string;
  to: string;
  /** One import behind the edge: "file -> imported". */
  example: string;
}

export function partEdges(files: readonly SourceFile[]): Edge[] {
  const edges = new Map<string, Edge>();
  for (const f of files) {
    const a = partOf(f.path);
    for (const imp of f.imports) {
      const b = partOf(imp);
      if (!a || !b || a === b) continue;
      const key = `${a}\0${b}`;
      if (!edges.has(key)) edges.set(key, {from: a, to: b, example: `${f.path} -> ${imp}`});
    }
  }
  return [...edges.values()];
}

/** The groups of parts that import each other in a circle (strongly connected components of two or more parts). */
export function partCycles(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const nodes = [...new Set(edges.flatMap((e) => [e.from, e.to]))].sort();
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      for (let w = stack.pop()!; ; w = stack.pop()!) {
        onStack.delete(w);
        group.push(w);
        if (w === v) break;
      }
      if (group.length > 1) out.push(group.sort());
    }
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return out;
}

/** Imports that break a rule about who may import what, each as "file -> imported: the rule". */
export function forbiddenImports(files: readonly SourceFile[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    const dialect = /^src\/api\/dialects\/([^/]+)\//.exec(f.path)?.[1];
    const inEngine = f.path.startsWith("src/engine/");
    for (const imp of f.imports) {
      const say = (rule: string) => out.push(`${f.path} -> ${imp}: ${rule}`);
      if (dialect) {
        const other = /^src\/api\/dialects\/([^/]+)\//.exec(imp)?.[1];
        if (other && other !== dialect) say("a dialect never imports another dialect");
        if (imp.startsWith("src/api/side/") || imp.startsWith("src/side-models/")) say("a dialect never imports side-model code");
      }
      if (f.path.startsWith("src/api/side/") && imp.startsWith("src/api/dialects/")) say("side routes never import dialect code");
      if (!inEngine && imp.startsWith("src/engine/") && imp !== "src/engine/index.ts") say("outside the engine, import it only through src/engine/index.ts");
      if (!inEngine && imp === "node-llama-cpp") say("outside the engine, reach node-llama-cpp through src/engine/index.ts");
      if (f.path.startsWith("src/core/") && !imp.startsWith("src/core/")) say("core imports nothing outside core");
    }
  }
  return out;
}

/** Files over MAX_FILE_LINES lines and lines over MAX_LINE_CHARS characters. */
export function oversized(files: readonly SourceFile[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    const n = f.lines.at(-1) === "" ? f.lines.length - 1 : f.lines.length;
    if (n > MAX_FILE_LINES) out.push(`${f.path}: ${n} lines (at most ${MAX_FILE_LINES})`);
    f.lines.forEach((line, i) => {
      if (line.length > MAX_LINE_CHARS) out.push(`${f.path}:${i + 1}: ${line.length} characters (at most ${MAX_LINE_CHARS})`);
    });
  }
  return out;
}

/** The file that maps a call syntax to its shape (src/syntax/registry.ts): the only one that may read `syntax.shape`. */
export const SHAPE_REGISTRY = "src/syntax/registry.ts";

/** Reading a call syntax's shape: comparing a `.shape` with a call shape's name, a `case` of one (not "json" or "named",
 * which other switches have: a transcription's format, a phase boundary's kind), or a custom kind. */
const SHAPE_READ = /\.shape\s*[!=]==?\s*"(?:json|named|xml|custom)"|\bcase\s+"(?:xml|custom)"|\.kind\s*[!=]==?\s*"(?:harmony|gemma4)"/;

/** Lines outside the registry that read a call syntax's shape, each as "file:line: text". */
export function shapeReads(files: readonly SourceFile[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    if (f.path === SHAPE_REGISTRY) continue;
    f.lines.forEach((line, i) => {
      if (SHAPE_READ.test(line)) out.push(`${f.path}:${i + 1}: ${line.trim()}`);
    });
  }
  return out;
}

export function describeCycle(group: readonly string[], edges: readonly Edge[]): string {
  const inside = edges.filter((e) => group.includes(e.from) && group.includes(e.to));
  return `${group.join(" <-> ")}: ${inside.map((e) => e.example).join("; ")}`;
}

export const repoRelative = (root: string, p: string) => posix(relative(root, p));
