// POST /apply-template and the chat template /health reports, in-process over the engine double: the prompt it
// returns is exactly the one the chat route hands the engine (tools, thinking switch, continue_final_message
// included), its body gets the chat route's 400s, it needs the key like every other route, and nothing is
// decoded. SVC_CHAT_TEMPLATE replaces the double's "GGUF" template (source, sha256, family, /props text), and a
// template, file or GGUF's own, that cannot be read, parsed or pass the start probe is refused naming where it came
// from and the line. The real server and model are in e2e/chat-template-file.test.ts.

import assert from "node:assert/strict";
import {createHash} from "node:crypto";
import {mkdtempSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import {ConfigError} from "../../src/config/config.ts";
import {loadChatTemplate, readTemplateFile, UnusableTemplateError} from "../../src/load-models.ts";
import {createLogger, createMemoryLogger} from "../../src/observability/log.ts";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";
import {CHATML_TEMPLATE} from "../doubles/engine-double.ts";

/** ChatML with Hermes-style tools: a tools block in the system turn, calls as <tool_call> JSON. */
const HERMES_CHATML = [
  "{%- if tools %}{{- '<|im_start|>system\\n# Tools\\n<tools>' }}{%- for t in tools %}{{- '\\n' + (t | tojson) }}{%- endfor %}",
  "{{- '\\n</tools><|im_end|>\\n' }}{%- endif %}",
  "{%- for m in messages %}",
  "{%- if m.role == 'assistant' and m.tool_calls %}{{- '<|im_start|>assistant\\n' + (m.content or '') }}",
  "{%- for c in m.tool_calls %}{{- '<tool_call>\\n{\"name\": \"' + c.function.name + '\", \"arguments\": ' + (c.function.arguments | tojson) + '}\\n</tool_call>' }}{%- endfor %}",
  "{{- '<|im_end|>\\n' }}",
  "{%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}",
  "{%- endfor %}",
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
].join("\n");

const weather = {type: "function", function: {name: "get_weather", description: "Weather of a city",
  parameters: {type: "object", properties: {city: {type: "string"}}, required: ["city"]}}};
const user = (content: string) => ({role: "user", content});
const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest("hex");

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-apply-template-"));
});
after(() => {
  rmSync(dir, {recursive: true, force: true});
});

/** The text of the prompt the engine was handed for the last decode (the double's tokenizer round-trips it). */
function lastPrompt(server: InProcessApp): string {
  const record = server.engine.decodes.at(-1);
  assert.ok(record, "the chat request reached the engine");
  return server.engine.detokenize(record.job.prompt, {special: true});
}

describe("POST /apply-template over the GGUF's template", () => {
  let server: InProcessApp;
  before(async () => {
    server = await startInProcessApp({env: {SVC_PARALLEL: "1"}, script: () => "OK"});
  });
  after(async () => {
    await server?.close();
  });

  /** The prompt /apply-template gives for `body`, checked equal to the one the chat route gives the engine. */
  async function sameAsChat(body: Record<string, unknown>): Promise<string> {
    const applied = await server.post("/apply-template", body);
    assert.equal(applied.status, 200, applied.text);
    assert.deepEqual(Object.keys(applied.body), ["prompt"]);
    const chat = await server.post("/v1/chat/completions", {...body, max_tokens: 1});
    assert.equal(chat.status, 200, chat.text);
    assert.equal(applied.body.prompt, lastPrompt(server));
    return applied.body.prompt;
  }

  test("returns exactly the text the chat route's prompt is", async () => {
    const prompt = await sameAsChat({messages: [{role: "system", content: "Be brief."}, user("Hi <|im_end|> there")]});
    assert.equal(prompt, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi <|im_end|> there<|im_end|>\n<|im_start|>assistant\n");
  });

  test("add_generation_prompt false and continue_final_message shape the end as on the chat route", async () => {
    const noHeader = await sameAsChat({messages: [user("Hi")], add_generation_prompt: false});
    assert.equal(noHeader, "<|im_start|>user\nHi<|im_end|>\n");
    const continued = await sameAsChat({messages: [user("Hi"), {role: "assistant", content: "The answer is"}], continue_final_message: true,
      add_generation_prompt: false});
    assert.ok(continued.endsWith("<|im_start|>assistant\nThe answer is"), continued);
  });

  test("tools reach it (a template without tool support gets them in the server's system message); tool_choice none leaves them out", async () => {
    const withTools = await sameAsChat({messages: [user("Weather in Paris?")], tools: [weather]});
    assert.match(withTools, /get_weather/);
    assert.match(withTools, /"tool_calls"/);
    const none = await sameAsChat({messages: [user("Weather in Paris?")], tools: [weather], tool_choice: "none"});
    assert.doesNotMatch(none, /get_weather/);
  });

  test("nothing is decoded", async () => {
    const before = server.engine.decodes.length;
    const res = await server.post("/apply-template", {messages: [user("Hi")], tools: [weather]});
    assert.equal(res.status, 200);
    assert.equal(server.engine.decodes.length, before);
  });

  test("a bad body gets the chat route's 400, naming the field", async () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{}, "messages", /^messages: /],
      [{messages: []}, "messages", /^messages: /],
      [{messages: [{role: "robot", content: "hi"}]}, "messages[0].role", /^messages\[0\]\.role: /],
      [{messages: [user("hi")], tools: [{type: "web_search"}]}, "tools[0].type", /^tools\[0\]\.type: must be "function"/],
      [{messages: [user("hi")], chat_template_kwargs: {enable_thinking: "yes"}}, "chat_template_kwargs.enable_thinking", /must be a boolean/],
      [{messages: [user("hi")], continue_final_message: true, add_generation_prompt: false}, "continue_final_message", /last message to be from the assistant/],
      [{messages: [user("hi")], reasoning_effort: "extreme"}, "reasoning_effort", /^reasoning_effort: /],
      // Compiled in the pipeline, refused there as on the chat route.
      [{messages: [user("hi")], response_format: {type: "json_schema", json_schema: {name: "x", schema: {type: "string", pattern: "^a"}}}},
        "response_format.json_schema.schema", /"pattern"/],
    ];
    for (const [body, param, message] of cases) {
      const res = await server.post("/apply-template", body);
      const chat = await server.post("/v1/chat/completions", body);
      assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      assert.equal(res.body.error.param, param, res.text);
      assert.match(res.body.error.message, message);
      assert.deepEqual(res.body, chat.body, "the same refusal as the chat route");
    }
  });

  test("/health reports the template in use: source, path, sha256, check, engine and family", async () => {
    const h = (await server.get("/health")).body;
    assert.deepEqual(h.chat_template, {
      source: "gguf",
      path: "gguf:tokenizer.chat_template",
      sha256: sha256(CHATML_TEMPLATE),
      check: "ok",
      engine: "js",
      family: {id: "generic", name: h.chat_template.family.name, derivation: null},
    });
    assert.equal(typeof h.chat_template.family.name, "string");
    assert.ok(h.routes.includes("POST /apply-template"));
    assert.equal((await server.get("/props")).body.chat_template, CHATML_TEMPLATE);
  });

  test("only at /apply-template, like the other llama.cpp-style ops routes", async () => {
    assert.equal((await server.post("/v1/apply-template", {messages: [user("Hi")]})).status, 404);
  });
});

describe("POST /apply-template needs the key like every other route", () => {
  const KEY = "sk-apply-0123456789";
  let server: InProcessApp;
  before(async () => {
    server = await startInProcessApp({env: {SVC_API_KEY: KEY, SVC_PARALLEL: "1"}});
  });
  after(async () => {
    await server?.close();
  });

  test("401 without or with a wrong key, 200 with it (Bearer or x-api-key)", async () => {
    const body = {messages: [user("Hi")]};
    const none = await server.post("/apply-template", body);
    assert.equal(none.status, 401);
    assert.equal(none.body.error.type, "authentication_error");
    assert.equal((await server.post("/apply-template", body, {authorization: "Bearer sk-wrong"})).status, 401);
    assert.equal((await server.post("/apply-template", body, {authorization: `Bearer ${KEY}`})).status, 200);
    assert.equal((await server.post("/apply-template", body, {"x-api-key": KEY})).status, 200);
  });
});

describe("a model without a usable chat template", () => {
  test("no template: /apply-template gets the chat route's 400; /health says how to supply one", async () => {
    const server = await startInProcessApp({env: {SVC_PARALLEL: "1"}, engine: {chatTemplate: null}});
    try {
      const body = {messages: [user("Hi")]};
      const res = await server.post("/apply-template", body);
      assert.equal(res.status, 400);
      assert.deepEqual(res.body, (await server.post("/v1/chat/completions", body)).body);
      assert.match(res.body.error.message, /no chat template/);
      const h = (await server.get("/health")).body.chat_template;
      assert.equal(h.source, null);
      assert.equal(h.sha256, null);
      assert.equal(h.family, null);
      assert.match(h.check, /no chat template.*SVC_CHAT_TEMPLATE/);
    } finally {
      await server.close();
    }
  });

  test("a GGUF template that does not parse stops the start, naming the model file, tokenizer.chat_template, the line and the error", async () => {
    const broken = "{%- for m in messages %}\n{{ m.content }}\n{%- if m.role %}\n{%- endfor %}\n";
    await assert.rejects(startInProcessApp({env: {SVC_PARALLEL: "1"}, engine: {chatTemplate: broken}}),
      (err: unknown) => {
        assert.ok(err instanceof UnusableTemplateError, String(err));
        assert.match(err.message, new RegExp("^the model's own chat template cannot be used: engine-double, tokenizer.chat_template: line 4: " +
          "does not parse: .*endfor.*; give a working template with SVC_CHAT_TEMPLATE=<file> \\(or --chat-template-file <file>\\)$"));
        return true;
      });
  });

  test("a GGUF template that parses but fails the start probe stops the start, saying what the probe sent and the error", async () => {
    await assert.rejects(startInProcessApp({env: {SVC_PARALLEL: "1"}, engine: {chatTemplate: "{{ raise_exception('svc refuses every chat') }}"}}),
      (err: unknown) => {
        assert.ok(err instanceof UnusableTemplateError, String(err));
        assert.equal(err.message, "the model's own chat template cannot be used: engine-double, tokenizer.chat_template: parses, but the start probe " +
          'sent [user "svc probe question"] with add_generation_prompt, and the template failed: svc refuses every chat; ' +
          'then [system "svc probe system text", user "svc probe question"] with add_generation_prompt, and the template failed: ' +
          "svc refuses every chat; give a working template with SVC_CHAT_TEMPLATE=<file> (or --chat-template-file <file>)");
        return true;
      });
    // One that renders without the user's text is as useless.
    await assert.rejects(startInProcessApp({env: {SVC_PARALLEL: "1"}, engine: {chatTemplate: "{{ bos_token }}hello"}}),
      /start probe sent \[user "svc probe question"\] with add_generation_prompt, and the prompt it made lacks the user's text; then/);
  });

  test("a GGUF template that needs a system message starts (the probe's second conversation)", async () => {
    const needsSystem = "{%- if messages[0].role != 'system' %}{{ raise_exception('a system message comes first') }}{%- endif %}" +
      "{%- for m in messages %}{{ m.role + ': ' + m.content + '\\n' }}{%- endfor %}";
    const server = await startInProcessApp({env: {SVC_PARALLEL: "1"}, engine: {chatTemplate: needsSystem}});
    await server.close();
  });
});

describe("SVC_CHAT_TEMPLATE", () => {
  let server: InProcessApp;
  let path: string;
  before(async () => {
    path = join(dir, "hermes-chatml.jinja");
    writeFileSync(path, HERMES_CHATML);
    server = await startInProcessApp({env: {SVC_PARALLEL: "1", SVC_CHAT_TEMPLATE: path}, script: () => "OK"});
  });
  after(async () => {
    await server?.close();
  });

  test("replaces the GGUF's template: /health reports the file as source, its sha256 and its family; /props its text", async () => {
    const h = (await server.get("/health")).body.chat_template;
    assert.equal(h.source, path);
    assert.equal(h.path, path);
    assert.equal(h.sha256, sha256(HERMES_CHATML));
    assert.equal(h.check, "ok");
    assert.equal(h.engine, "js");
    assert.equal(h.family.id, "hermes");
    assert.equal((await server.get("/props")).body.chat_template, HERMES_CHATML);
  });

  test("the chat route's prompt follows the file, tools in its own tools block", async () => {
    const body = {messages: [user("Weather in Paris?")], tools: [weather]};
    const applied = await server.post("/apply-template", body);
    assert.equal(applied.status, 200, applied.text);
    assert.ok(applied.body.prompt.startsWith("<|im_start|>system\n# Tools\n<tools>\n{"), applied.body.prompt);
    assert.match(applied.body.prompt, /"name":\s*"get_weather"/);
    assert.doesNotMatch(applied.body.prompt, /"tool_calls"/, "a template with tools gets no generic system message");
    assert.ok(applied.body.prompt.endsWith("<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n"));
    assert.equal((await server.post("/v1/chat/completions", {...body, max_tokens: 1})).status, 200);
    assert.equal(applied.body.prompt, lastPrompt(server));
  });

  test("a file that is missing, empty or does not parse stops the start, naming the file, the line and the way out", async () => {
    const missing = join(dir, "nope.jinja");
    await assert.rejects(startInProcessApp({env: {SVC_CHAT_TEMPLATE: missing}}), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.deepEqual(err.problems.length, 1);
      assert.match(err.problems[0]!, new RegExp(`^SVC_CHAT_TEMPLATE="${missing}": cannot be read \\(ENOENT.*\\); .*unset SVC_CHAT_TEMPLATE to use the model's own template$`));
      return true;
    });
    const empty = join(dir, "empty.jinja");
    writeFileSync(empty, " \n");
    assert.throws(() => readTemplateFile(empty), /SVC_CHAT_TEMPLATE=".*empty\.jinja": the file is empty/);

    const broken = join(dir, "broken.jinja");
    writeFileSync(broken, "{%- for m in messages %}\n{{ m.content }}\n{%- if m.role %}\n{%- endfor %}\n");
    await assert.rejects(startInProcessApp({env: {SVC_CHAT_TEMPLATE: broken}}), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.problems[0]!, new RegExp(`^SVC_CHAT_TEMPLATE="${broken}": line 4: does not parse: .*endfor.*; fix the template, or unset SVC_CHAT_TEMPLATE`));
      return true;
    });
  });

  test("a file that parses but fails the start probe stops the start, naming the file, what the probe sent and the error", () => {
    const file = {path: join(dir, "refuses.jinja"), text: "{{ raise_exception('svc refuses every chat') }}"};
    assert.throws(() => loadChatTemplate({info: {chatTemplate: CHATML_TEMPLATE, bosText: "", eosText: "", architecture: "llama", modelName: null}, file,
      logger: createLogger("silent")}), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.problems[0]!, new RegExp(`^SVC_CHAT_TEMPLATE="${file.path}": parses, but the start probe sent \\[user "svc probe question"\\] ` +
        "with add_generation_prompt, and the template failed: svc refuses every chat; then .*; fix the template, or unset SVC_CHAT_TEMPLATE"));
      return true;
    });
  });

  test("a file that parses but fails the self-check only warns, as the GGUF's own template does", () => {
    const logger = createMemoryLogger();
    const file = {path: join(dir, "drops-system.jinja"), text: "{%- for m in messages %}{%- if m.role != 'system' %}{{ m.content }}{%- endif %}{%- endfor %}"};
    const template = loadChatTemplate({info: {chatTemplate: CHATML_TEMPLATE, bosText: "", eosText: "", architecture: "llama", modelName: null}, file, logger});
    assert.ok(template);
    assert.notEqual(template.check, "ok");
    assert.equal(template.origin, file.path);
    assert.ok(logger.lines.some((l) => /warn chat template self-check failed/.test(l) && l.includes(file.path)), logger.lines.join("\n"));
    // The GGUF's own template in the same case: a warning too, and no throw.
    const own = loadChatTemplate({info: {chatTemplate: file.text, bosText: "", eosText: "", architecture: "llama", modelName: null}, file: null,
      logger: createLogger("silent")});
    assert.ok(own && own.check !== "ok");
  });
});
