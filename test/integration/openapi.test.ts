// GET /openapi.json: the document lists every route the server registered (a route without a registry entry fails
// here), is a valid OpenAPI 3.1 document whose $refs all resolve, and its request schemas agree with the routes: a
// real body of each main route passes the schema and the route, a bad one fails both. Replies are held to the
// documented shapes, errors included (OpenAI's shape, Anthropic's under /v1/messages). In-process over the engine
// double; the side routes are registered over a stub (registration reads nothing of the models).

import assert from "node:assert/strict";
import {spawnSync} from "node:child_process";
import {after, before, describe, test} from "node:test";
import {Ajv2020} from "ajv/dist/2020.js";
import Fastify from "fastify";
import {buildServer} from "../../src/api/server.ts";
import {installOpenApi, openApiStatus} from "../../src/api/openapi/route.ts";
import {openApiPath} from "../../src/api/openapi/document.ts";
import {registerSideRoutes} from "../../src/api/side/index.ts";
import {checkSessionName, FROM_HEADER, KEEP_HEADER} from "../../src/api/fields/session-headers.ts";
import type {ServerDeps} from "../../src/api/deps.ts";
import type {SideModels} from "../../src/side-models/side-models.ts";
import {createLogger} from "../../src/observability/log.ts";
import {pythonTools} from "../../support/python-tools.ts";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";

type Doc = {openapi: string; paths: Record<string, Record<string, any>>; components: {schemas: Record<string, unknown>}; [k: string]: any};

let server: InProcessApp;
let doc: Doc;

before(async () => {
  server = await startInProcessApp({env: {SVC_PARALLEL: "1"}});
  const res = await server.get("/openapi.json");
  assert.equal(res.status, 200, res.text);
  doc = res.body;
});
after(async () => {
  await server?.close();
});

const METHODS = ["get", "post", "put", "patch", "delete"];

function operations(d: Doc): [string, string, any][] {
  return Object.entries(d.paths).flatMap(([path, item]) => Object.entries(item).filter(([m]) => METHODS.includes(m)).map(([m, op]) => [path, m, op] as [string, string, any]));
}

function resolveRef(d: Doc, ref: string): unknown {
  assert.match(ref, /^#\//, `only local refs: ${ref}`);
  let cur: any = d;
  for (const part of ref.slice(2).split("/")) cur = cur?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  return cur;
}

function refsIn(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => refsIn(n, out));
  else if (node && typeof node === "object") {
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string") out.push(v);
      else refsIn(v, out);
    }
  }
  return out;
}

/** An ajv that knows the document, so `#/components/schemas/X` refs resolve the way a client's validator would. */
function validatorFor(d: Doc) {
  const ajv = new Ajv2020({strict: false, allErrors: false});
  ajv.addSchema({...d, $id: "openapi.json"});
  return (schema: unknown) => ajv.compile({$schema: "https://json-schema.org/draft/2020-12/schema", ...rewrite(schema)});
}

/** Local refs point into the registered document. */
function rewrite(node: any): any {
  if (Array.isArray(node)) return node.map(rewrite);
  if (node && typeof node === "object") {
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === "$ref" && typeof v === "string" && v.startsWith("#/") ? `openapi.json${v}` : rewrite(v)]));
  }
  return node;
}

describe("/openapi.json lists every route", () => {
  test("no registered route is missing from the document, and the document invents none", () => {
    const status = openApiStatus(server.app.server)!;
    assert.deepEqual(status.undocumented, [], "add these to src/api/openapi/registry.ts");
    const listed = new Set(operations(doc).map(([p, m]) => `${m.toUpperCase()} ${p}`));
    for (const r of status.routes) {
      if (r.method === "HEAD" || r.method === "OPTIONS") continue;
      assert.ok(listed.has(`${r.method} ${openApiPath(r.url)}`), `${r.method} ${r.url} is registered but not in the document`);
    }
    for (const key of listed) {
      assert.ok(status.routes.some((r) => `${r.method} ${openApiPath(r.url)}` === key), `${key} is in the document but not registered`);
    }
    for (const key of ["POST /v1/chat/completions", "POST /v1/completions", "POST /v1/responses", "POST /v1/messages", "GET /health",
      "GET /metrics", "POST /tokenize", "GET /svc/handles", "DELETE /svc/handles/{name}", "GET /openapi.json"]) {
      assert.ok(listed.has(key), key);
    }
  });

  test("a route registered without a registry entry is reported, not guessed at", async () => {
    const app = buildServer({bodyLimitBytes: 1 << 20, logger: createLogger("silent")});
    installOpenApi(app, {version: "0", keyed: false, maxTokensCap: 64, bodyLimitBytes: 1 << 20, logger: createLogger("silent")});
    app.get("/health", async () => ({status: "ok"}));
    app.post("/v1/brand-new", async () => ({}));
    await app.ready();
    assert.deepEqual(openApiStatus(app)!.undocumented, ["POST /v1/brand-new"]);
    const res = await app.inject({method: "GET", url: "/openapi.json"});
    assert.ok(!("/v1/brand-new" in JSON.parse(res.body).paths));
    await app.close();
  });

  test("the side routes are listed when side models are loaded", async () => {
    const app = buildServer({bodyLimitBytes: 1 << 20, logger: createLogger("silent")});
    installOpenApi(app, {version: "0", keyed: false, maxTokensCap: 64, bodyLimitBytes: 1 << 20, logger: createLogger("silent")});
    registerSideRoutes(app, {} as ServerDeps, {} as SideModels);
    await app.ready();
    assert.deepEqual(openApiStatus(app)!.undocumented, []);
    const d = JSON.parse((await app.inject({method: "GET", url: "/openapi.json"})).body) as Doc;
    for (const p of ["/v1/embeddings", "/embeddings", "/classify", "/v1/rerank", "/v1/moderations", "/v1/decide"]) {
      assert.ok(d.paths[p]?.post?.requestBody, p);
    }
    assert.ok(d.paths["/v1/decide"]!.post.responses["422"], "decide answers 422 for a malformed body");
    const speech = d.paths["/v1/audio/transcriptions"]?.post?.requestBody?.content?.["multipart/form-data"]?.schema;
    assert.ok(speech, "transcriptions documented as multipart");
    assert.deepEqual(speech.required, ["file"]);
    assert.equal(speech.properties.file.format, "binary");
    // Each body route states the limit the server enforces: the transcription route its own, the others the server's.
    const transcriptions = d.paths["/v1/audio/transcriptions"]!.post;
    assert.ok(transcriptions["x-body-limit-bytes"] > 1 << 20, `transcriptions: ${transcriptions["x-body-limit-bytes"]}`);
    assert.equal(transcriptions.responses["413"].description, `The body is larger than ${transcriptions["x-body-limit-bytes"]} bytes, this route's limit`);
    assert.equal(d.paths["/v1/embeddings"]!.post["x-body-limit-bytes"], 1 << 20);
    assert.equal(d.paths["/v1/embeddings"]!.post.requestBody.description, `At most ${1 << 20} bytes; a larger body gets 413`);
    await app.close();
  });
});

describe("the document is valid OpenAPI 3.1", () => {
  test("structure: version, an operation id and a 200 on every operation, every $ref resolves, every schema compiles", () => {
    assert.equal(doc.openapi, "3.1.0");
    const ids = new Set<string>();
    const compile = validatorFor(doc);
    for (const [path, method, op] of operations(doc)) {
      assert.ok(op.responses?.["200"], `${method} ${path} documents its 200`);
      assert.ok(op.responses?.["400"], `${method} ${path} documents its error body`);
      assert.ok(!ids.has(op.operationId), `operationId ${op.operationId} is unique`);
      ids.add(op.operationId);
      for (const m of path.matchAll(/\{([^}]+)\}/g)) {
        assert.ok(op.parameters?.some((p: any) => p.in === "path" && p.name === m[1] && p.required), `${method} ${path} declares {${m[1]}}`);
      }
      const body = op.requestBody?.content?.["application/json"]?.schema ?? op.requestBody?.content?.["multipart/form-data"]?.schema;
      if (body) compile(body);
      for (const r of Object.values<any>(op.responses)) for (const c of Object.values<any>(r.content ?? {})) compile(c.schema);
    }
    for (const ref of refsIn(doc)) assert.notEqual(resolveRef(doc, ref), undefined, `${ref} resolves`);
  });

  test("openapi-spec-validator accepts it", () => {
    // The pinned validator in the tests' own venv (made on first use), not whatever the system's python3 has.
    const {python} = pythonTools();
    const run = spawnSync(python, ["-c",
      "import sys, json\nfrom openapi_spec_validator import validate\nfrom openapi_spec_validator.validation.validators import OpenAPIV31SpecValidator\nvalidate(json.load(sys.stdin), cls=OpenAPIV31SpecValidator)\nprint('ok')"],
    {input: JSON.stringify(doc), encoding: "utf8"});
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /ok/);
  });

  test("behind the API key like every route but /health, which the document marks open", async () => {
    const keyed = await startInProcessApp({env: {SVC_API_KEY: "sk-doc-123", SVC_PARALLEL: "1", SVC_MAX_TOKENS_CAP: "8"}});
    try {
      const refused = await keyed.get("/openapi.json");
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error.type, "authentication_error");
      const ok = await keyed.get("/openapi.json", {authorization: "Bearer sk-doc-123"});
      assert.equal(ok.status, 200);
      assert.deepEqual(ok.body.security, [{bearer: []}, {apiKey: []}]);
      assert.ok(ok.body.components.securitySchemes.bearer);
      assert.deepEqual(ok.body.paths["/health"].get.security, []);
      assert.ok(ok.body.paths["/v1/chat/completions"].post.responses["401"]);
      assert.equal(ok.body.paths["/health"].get.responses["401"], undefined);
      assert.equal(ok.body.paths["/openapi.json"].get.security, undefined, "the document itself needs the key");
      // What the document marks open is what the auth hook leaves open, and the rest is refused without the key.
      for (const [path, method, op] of operations(ok.body)) {
        if (method !== "get" || path.includes("{")) continue;
        const res = await keyed.get(path);
        if (Array.isArray(op.security) && op.security.length === 0) assert.notEqual(res.status, 401, `${path} is documented open`);
        else assert.equal(res.status, 401, `${path} is documented as needing the key`);
      }
      // The budget cap is a setting: the routes that refuse above it carry it; Messages, which clamps, does not.
      const budget = (p: string, f: string) => ok.body.paths[p].post.requestBody.content["application/json"].schema.properties[f].anyOf[0];
      assert.equal(budget("/v1/chat/completions", "max_completion_tokens").maximum, 8);
      assert.equal(budget("/v1/responses", "max_output_tokens").maximum, 8);
      assert.equal(budget("/v1/completions", "max_tokens").maximum, 8);
      const over = await keyed.post("/v1/chat/completions", {messages: [{role: "user", content: "Hi"}], max_tokens: 9},
        {authorization: "Bearer sk-doc-123"});
      assert.equal(over.status, 400);
      assert.notEqual(ok.body.paths["/v1/messages"].post.requestBody.content["application/json"].schema.properties.max_tokens.maximum, 8);
    } finally {
      await keyed.close();
    }
  });
});

/** A real body and a bad one per main route, and what the route answers for each. */
const CASES: {path: string; good: unknown; bad: unknown; okSchema: string}[] = [
  {path: "/v1/chat/completions", good: {model: "x", messages: [{role: "user", content: "Hi"}], max_tokens: 4, temperature: 0.5},
    bad: {messages: [{role: "robot", content: "Hi"}]}, okSchema: "ChatCompletion"},
  {path: "/v1/completions", good: {prompt: "Once upon", max_tokens: 4, stop: ["\n"]}, bad: {prompt: "x", temperature: 7}, okSchema: "Completion"},
  {path: "/v1/responses", good: {input: "Hi", max_output_tokens: 4, reasoning: {effort: "low"}}, bad: {input: 42}, okSchema: "Response"},
  {path: "/v1/messages", good: {model: "x", max_tokens: 4, messages: [{role: "user", content: "Hi"}]},
    bad: {messages: [{role: "user", content: "Hi"}]}, okSchema: "Message"},
  {path: "/v1/messages/count_tokens", good: {messages: [{role: "user", content: "Hi"}]}, bad: {messages: []}, okSchema: "InputTokens"},
  {path: "/tokenize", good: {content: "Hello"}, bad: {content: 5}, okSchema: "Tokens"},
  {path: "/detokenize", good: {tokens: [72, 105]}, bad: {tokens: ["a"]}, okSchema: "Detokenized"},
  {path: "/apply-template", good: {messages: [{role: "user", content: "Hi"}]}, bad: {messages: "Hi"}, okSchema: "Prompt"},
];

describe("request schemas agree with the routes", () => {
  for (const c of CASES) {
    test(`POST ${c.path}: a real body passes schema and route, a bad one fails both, each reply in its documented shape`, async () => {
      const compile = validatorFor(doc);
      const op = doc.paths[c.path]!.post;
      const accepts = compile(op.requestBody.content["application/json"].schema);
      assert.ok(accepts(c.good), `schema refuses the real body: ${JSON.stringify(accepts.errors)}`);
      assert.ok(!accepts(c.bad), "schema accepts the bad body");

      const ok = await server.post(c.path, c.good);
      assert.equal(ok.status, 200, ok.text);
      const okShape = compile(op.responses["200"].content["application/json"].schema);
      assert.ok(okShape(ok.body), `200 body off its shape: ${JSON.stringify(okShape.errors)} ${ok.text}`);
      assert.equal(op.responses["200"].content["application/json"].schema.$ref, `#/components/schemas/${c.okSchema}`);

      const refused = await server.post(c.path, c.bad);
      assert.equal(refused.status, 400, refused.text);
      const errShape = compile(op.responses["400"].content["application/json"].schema);
      assert.ok(errShape(refused.body), `400 body off its shape: ${JSON.stringify(errShape.errors)} ${refused.text}`);
    });
  }

  test("errors under /v1/messages are documented in Anthropic's shape, elsewhere in OpenAI's", () => {
    const err = (p: string) => doc.paths[p]!.post.responses["400"].content["application/json"].schema.$ref;
    assert.equal(err("/v1/messages"), "#/components/schemas/AnthropicError");
    assert.equal(err("/messages/count_tokens"), "#/components/schemas/AnthropicError");
    assert.equal(err("/v1/chat/completions"), "#/components/schemas/OpenAiError");
    assert.equal(err("/v1/responses"), "#/components/schemas/OpenAiError");
  });

  test("the session headers are documented with the route's own name rule, and a kept name links to its DELETE", () => {
    const compile = validatorFor(doc);
    for (const p of ["/v1/chat/completions", "/v1/responses", "/v1/messages"]) {
      const op = doc.paths[p]!.post;
      const keep = op.parameters.find((x: any) => x.in === "header" && x.name === KEEP_HEADER);
      assert.ok(keep && op.parameters.some((x: any) => x.in === "header" && x.name === FROM_HEADER), p);
      const name = compile(keep.schema);
      for (const ok of ["a", "thread-1:main@v2", "x".repeat(128)]) {
        assert.ok(name(ok), ok);
        assert.equal(checkSessionName(ok, "n"), ok);
      }
      for (const bad of ["", ".", "-x", "a b", "a,b", "x".repeat(129)]) {
        assert.ok(!name(bad), bad);
        assert.throws(() => checkSessionName(bad, "n"));
      }
      assert.equal(op.responses["200"].links.ReleaseKeptSession.operationId, doc.paths["/svc/handles/{name}"]!.delete.operationId);
    }
  });

  test("streaming routes document text/event-stream", () => {
    for (const p of ["/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages"]) {
      assert.ok(doc.paths[p]!.post.responses["200"].content["text/event-stream"], p);
    }
  });

  // Found by the fuzzer (test/slow/fuzz-contract.test.ts): schemathesis holds each SSE event to the
  // text/event-stream schema, which first said "a string" while an event is {event?, data}.
  test("each streamed event matches the documented event shape, its data a JSON chunk or [DONE]", async () => {
    const compile = validatorFor(doc);
    const url = await server.listen();
    for (const c of CASES.slice(0, 4)) {
      const shape = compile(doc.paths[c.path]!.post.responses["200"].content["text/event-stream"].schema);
      const res = await fetch(`${url}${c.path}`, {method: "POST", headers: {"content-type": "application/json"},
        body: JSON.stringify({...(c.good as object), stream: true})});
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
      const events = (await res.text()).split("\n\n").filter((b) => b.trim() !== "" && !b.startsWith(":")).map((block) => {
        const ev: Record<string, string> = {};
        for (const line of block.split("\n")) {
          const m = /^(\w+): ?(.*)$/.exec(line);
          if (m) ev[m[1]!] = ev[m[1]!] === undefined ? m[2]! : `${ev[m[1]!]}\n${m[2]}`;
        }
        return ev;
      });
      assert.ok(events.length > 1, c.path);
      for (const ev of events) {
        assert.ok(shape(ev), `${c.path}: ${JSON.stringify(ev)} ${JSON.stringify(shape.errors)}`);
        if (ev.data !== "[DONE]") JSON.parse(ev.data!);
      }
    }
  });

  test("ops replies match their documented shapes", async () => {
    const compile = validatorFor(doc);
    for (const p of ["/health", "/v1/models", "/slots", "/cache", "/props", "/svc/handles"]) {
      const res = await server.get(p);
      assert.equal(res.status, 200, p);
      const shape = compile(doc.paths[p]!.get.responses["200"].content["application/json"].schema);
      assert.ok(shape(res.body), `${p}: ${JSON.stringify(shape.errors)}`);
    }
  });
});
