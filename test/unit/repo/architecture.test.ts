// The layering of src/ (docs/architecture.md), checked on every run: no two parts import each other (directly or
// around a circle); a dialect never imports another dialect or side-model code, and side routes never import
// dialect code; outside src/engine, the engine and node-llama-cpp are reached only through src/engine/index.ts;
// core imports nothing; only src/syntax/registry.ts reads a call syntax's shape; no file passes 400 lines and no line
// 160 characters. Each rule's checker is first shown to catch what it is for, on files written for the purpose (the cycles are the ones src/ had before the rule).

import assert from "node:assert/strict";
import {fileURLToPath} from "node:url";
import {describe, test} from "node:test";
import {describeCycle, forbiddenImports, oversized, parseSource, partCycles, partEdges, partOf, readSources, shapeReads,
  type SourceFile} from "../../../support/architecture.ts";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

/** A source file with the given imports (written as a file would, relative to its folder). */
const file = (path: string, ...imports: string[]): SourceFile =>
  parseSource(path, imports.map((spec, i) => `import type {X${i}} from "${spec}";`).join("\n") + "\n");

describe("the checkers catch what they are for", () => {
  test("imports are read in every form: named, type-only, multi-line, re-exports, side effects and dynamic", () => {
    const f = parseSource("src/api/x.ts", [
      `import {a} from "./a.ts";`,
      `import type {B,`,
      `  C} from "../core/b.ts";`,
      `export {d} from "../engine/index.ts";`,
      `export * from "./e.ts";`,
      `import "./f.ts";`,
      `const g = await import("../pipeline/g.ts");`,
      `import {h} from "node-llama-cpp";`,
    ].join("\n"));
    assert.deepEqual(f.imports, ["src/api/a.ts", "src/core/b.ts", "src/engine/index.ts", "src/api/e.ts", "src/api/f.ts", "src/pipeline/g.ts",
      "node-llama-cpp"]);
  });

  test("parts: top-level folders, src/api split into its subfolders, files in src/ are the root", () => {
    assert.deepEqual(["src/app.ts", "src/api/deps.ts", "src/api/dialects/chat/routes.ts", "src/api/side/guard/index.ts", "src/engine/kv/x.ts",
      "test/unit/x.ts"].map(partOf), ["(root)", "api", "api/dialects", "api/side", "engine", null]);
  });

  test("the four part cycles src/ had before this rule are each reported, with an import behind each edge", () => {
    const before = [
      file("src/core/generation.ts", "../templates/chat-template.ts"),
      file("src/templates/families/glm.ts", "../../core/call-syntax.ts"),
      file("src/engine/llama/llama-engine.ts", "../../observability/log.ts"),
      file("src/observability/metrics.ts", "../engine/kv/cache-report.ts"),
      file("src/pipeline/model-handle.ts", "../sessions/session-service.ts"),
      file("src/sessions/session-service.ts", "../pipeline/generate.ts"),
      file("src/api/dialects/chat/routes.ts", "../../side/chat-side.ts"),
      file("src/api/side/decide/chat-route.ts", "../../dialects/chat/encode.ts"),
      // Not a cycle: one direction only.
      file("src/api/side/rerank/route.ts", "../../deps.ts"),
    ];
    const edges = partEdges(before);
    const cycles = partCycles(edges);
    assert.deepEqual(cycles.map((c) => c.join(" ")).sort(), ["api/dialects api/side", "core templates", "engine observability", "pipeline sessions"]);
    const core = describeCycle(cycles.find((c) => c.includes("core"))!, edges);
    assert.match(core, /src\/core\/generation\.ts -> src\/templates\/chat-template\.ts/);
    assert.match(core, /src\/templates\/families\/glm\.ts -> src\/core\/call-syntax\.ts/);
  });

  test("a cycle around three parts is one group", () => {
    const edges = partEdges([file("src/grammar/a.ts", "../models/b.ts"), file("src/models/b.ts", "../config/c.ts"), file("src/config/c.ts", "../grammar/d.ts")]);
    assert.deepEqual(partCycles(edges), [["config", "grammar", "models"]]);
  });

  test("each import rule is reported, naming the file, the import and the rule", () => {
    const bad = forbiddenImports([
      file("src/api/dialects/chat/routes.ts", "../messages/encode.ts", "../../side/guard/index.ts", "../../../side-models/side-models.ts",
        "./decode.ts", "../../serve-generation.ts"),
      file("src/api/side/decide/chat-route.ts", "../../dialects/chat/encode.ts"),
      file("src/pipeline/generate.ts", "../engine/kv/region-memory.ts", "../engine/index.ts"),
      file("src/side-models/lm/scorer.ts", "node-llama-cpp"),
      file("src/engine/llama/llama-engine.ts", "node-llama-cpp", "../kv/region-memory.ts"),
      file("src/core/generation.ts", "../templates/chat-template.ts", "./messages.ts"),
    ]);
    assert.deepEqual(bad, [
      "src/api/dialects/chat/routes.ts -> src/api/dialects/messages/encode.ts: a dialect never imports another dialect",
      "src/api/dialects/chat/routes.ts -> src/api/side/guard/index.ts: a dialect never imports side-model code",
      "src/api/dialects/chat/routes.ts -> src/side-models/side-models.ts: a dialect never imports side-model code",
      "src/api/side/decide/chat-route.ts -> src/api/dialects/chat/encode.ts: side routes never import dialect code",
      "src/pipeline/generate.ts -> src/engine/kv/region-memory.ts: outside the engine, import it only through src/engine/index.ts",
      "src/side-models/lm/scorer.ts -> node-llama-cpp: outside the engine, reach node-llama-cpp through src/engine/index.ts",
      "src/core/generation.ts -> src/templates/chat-template.ts: core imports nothing outside core",
    ]);
  });

  test("reading a call syntax's shape outside the registry is reported; the registry itself and other `.shape`s are not", () => {
    const reads = shapeReads([
      parseSource("src/pipeline/x.ts", 'if (syntax.shape === "xml") a();\nswitch (s.shape) {\n  case "custom":\n}\nconst h = c.kind === "harmony";\n'),
      parseSource("src/syntax/registry.ts", 'switch (syntax.shape) {\n  case "xml":\n}\n'),
      parseSource("src/engine/kv/y.ts", 'const n = this.shape.regions;\nswitch (f) {\n  case "json": break;\n  case "named": break;\n}\n'),
    ]);
    assert.deepEqual(reads, [
      'src/pipeline/x.ts:1: if (syntax.shape === "xml") a();',
      'src/pipeline/x.ts:3: case "custom":',
      'src/pipeline/x.ts:5: const h = c.kind === "harmony";',
    ]);
  });

  test("sizes: a file of 401 lines and a line of 161 characters are reported; 400 and 160 are not", () => {
    const text = (lines: number, width: number) => Array.from({length: lines}, (_, i) => (i === 0 ? "x".repeat(width) : "y")).join("\n") + "\n";
    assert.deepEqual(oversized([parseSource("src/a.ts", text(400, 160))]), []);
    assert.deepEqual(oversized([parseSource("src/b.ts", text(401, 161))]), [
      "src/b.ts: 401 lines (at most 400)",
      "src/b.ts:1: 161 characters (at most 160)",
    ]);
  });
});

describe("src/ keeps its layering", () => {
  const files = readSources(ROOT);

  test("src/ is read: the files every layer needs are there", () => {
    const paths = new Set(files.map((f) => f.path));
    for (const p of ["src/app.ts", "src/engine/index.ts", "src/core/generation.ts", "src/api/model-router.ts", "src/pipeline/generate.ts"]) {
      assert.ok(paths.has(p), `${p} was read`);
    }
    assert.ok(files.length > 200, `${files.length} files read`);
  });

  test("no two parts import each other, directly or around a circle", () => {
    const edges = partEdges(files);
    assert.deepEqual(partCycles(edges).map((c) => describeCycle(c, edges)), []);
  });

  test("dialects, side routes, the engine's entrance and core keep their import rules", () => {
    assert.deepEqual(forbiddenImports(files), []);
  });

  test("only src/syntax/registry.ts reads which shape a call syntax has: every other module asks the shape", () => {
    assert.deepEqual(shapeReads(files), []);
  });

  test("no file over 400 lines, no line over 160 characters", () => {
    assert.deepEqual(oversized(files), []);
  });
});
