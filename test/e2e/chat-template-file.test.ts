// SVC_CHAT_TEMPLATE on the real server and the test model: a small ChatML file (Hermes-style tools) replaces the
// model's own template, SmolLM2's (/health's source, sha256 and family; the prompt of a chat request, seen through
// /apply-template), and a file that is missing or does not parse stops the start with exit code 2 and a line
// naming the file (and the line). So does the GGUF's own template (a scripted model carrying a broken one) when it
// does not parse or fails the start probe. What /apply-template and /health do over every template is in
// integration/apply-template.test.ts.

import assert from "node:assert/strict";
import {spawnSync} from "node:child_process";
import {createHash} from "node:crypto";
import {mkdtempSync, rmSync, writeFileSync} from "node:fs";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {fileURLToPath} from "node:url";
import {after, before, describe, test} from "node:test";
import {get, post, serverArgs, startServer, type RunningServer} from "../../support/server.ts";
import {testModelPath} from "../../support/test-model.ts";
import {writeScriptedModel} from "../fixtures/scripted-model/build.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** ChatML with its own default system line and a Hermes tools block, so the family changes from SmolLM2's generic. */
const CHATML = [
  "{%- if messages[0].role != 'system' %}{{- '<|im_start|>system\\nYou are svc, replying tersely.' }}",
  "{%- if tools %}{{- '\\n<tools>' }}{%- for t in tools %}{{- '\\n' + (t | tojson) }}{%- endfor %}{{- '\\n</tools>' }}{%- endif %}",
  "{{- '<|im_end|>\\n' }}{%- endif %}",
  "{%- for m in messages %}",
  "{%- if m.role == 'assistant' and m.tool_calls %}{{- '<|im_start|>assistant\\n' + (m.content or '') }}",
  "{%- for c in m.tool_calls %}{{- '<tool_call>\\n{\"name\": \"' + c.function.name + '\", \"arguments\": ' + (c.function.arguments | tojson) + '}\\n</tool_call>' }}{%- endfor %}",
  "{{- '<|im_end|>\\n' }}",
  "{%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}",
  "{%- endfor %}",
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
].join("\n");

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-template-file-"));
});
after(() => {
  rmSync(dir, {recursive: true, force: true});
});

describe("SVC_CHAT_TEMPLATE replaces the model's template", () => {
  let server: RunningServer;
  let path: string;
  before(async () => {
    path = join(dir, "chatml.jinja");
    writeFileSync(path, CHATML);
    server = await startServer({SVC_CHAT_TEMPLATE: path, SVC_PARALLEL: "1"});
  });
  after(async () => {
    await server?.stop();
  });

  test("/health reports the file as source, its sha256 and its family; /props shows its text", async () => {
    const h = (await get(`${server.url}/health`)).body.chat_template;
    assert.equal(h.source, path);
    assert.equal(h.path, path);
    assert.equal(h.sha256, createHash("sha256").update(CHATML, "utf8").digest("hex"));
    assert.equal(h.check, "ok");
    assert.equal(h.family.id, "hermes");
    assert.equal((await get(`${server.url}/props`)).body.chat_template, CHATML);
  });

  test("a chat request's prompt follows the file (seen through /apply-template), and the model answers it", async () => {
    const body = {messages: [{role: "user", content: "Say hi."}], max_tokens: 4, temperature: 0};
    const applied = await post(`${server.url}/apply-template`, body);
    assert.equal(applied.status, 200, applied.text);
    assert.equal(applied.body.prompt, "<|im_start|>system\nYou are svc, replying tersely.<|im_end|>\n<|im_start|>user\nSay hi.<|im_end|>\n<|im_start|>assistant\n");
    const tools = [{type: "function", function: {name: "get_weather", parameters: {type: "object", properties: {city: {type: "string"}}}}}];
    const withTools = await post(`${server.url}/apply-template`, {...body, tools});
    assert.match(withTools.body.prompt, /^<\|im_start\|>system\nYou are svc, replying tersely\.\n<tools>\n\{.*"get_weather".*\}\n<\/tools><\|im_end\|>\n/s);
    const reply = await server.client.chat.completions.create({model: "m", ...body} as never) as {usage?: {prompt_tokens: number}; choices: unknown[]};
    assert.equal(reply.choices.length, 1);
    // The same text as /apply-template's, give or take how its pieces are cut into tokens.
    const tokens = (await post(`${server.url}/tokenize`, {content: applied.body.prompt})).body.tokens as number[];
    assert.ok(Math.abs(reply.usage!.prompt_tokens - tokens.length) <= 2, `prompt_tokens ${reply.usage!.prompt_tokens} against ${tokens.length}`);
  });
});

describe("a template file that cannot be used stops the start", () => {
  // The test model, as the servers above: a template that does not parse is found once the model is loaded.
  let model: string;
  before(async () => {
    model = await testModelPath();
  });
  function start(env: Record<string, string>) {
    return spawnSync(process.execPath, serverArgs(), {cwd: ROOT, encoding: "utf8", timeout: 120_000,
      env: {...process.env, UV_THREADPOOL_SIZE: "1", SVC_PORT: "0", SVC_CTX_SIZE: "2048", SVC_PARALLEL: "1", SVC_PROGRESS: "lines", SVC_MODEL: model, ...env}});
  }

  test("a missing file: exit code 2 at once, naming the file", () => {
    const missing = join(dir, "missing.jinja");
    const r = start({SVC_CHAT_TEMPLATE: missing});
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`svc: bad setting SVC_CHAT_TEMPLATE="${missing}": cannot be read \\(ENOENT`));
    assert.doesNotMatch(r.stderr, /model ready/, "refused before the model loads");
  });

  test("a syntax error: exit code 2, one line naming the file, the line and the error, and what to do", () => {
    const broken = join(dir, "broken.jinja");
    writeFileSync(broken, "{%- for m in messages %}\n{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}\n{%- if m.role %}\n{%- endfor %}\n");
    const r = start({SVC_CHAT_TEMPLATE: broken});
    assert.equal(r.status, 2, r.stderr);
    const lines = r.stderr.split("\n").filter((l) => l.includes(broken));
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, new RegExp(`^svc: bad setting SVC_CHAT_TEMPLATE="${broken}": line 4: does not parse: .*endfor.*; fix the template, or unset SVC_CHAT_TEMPLATE to use the model's own template$`));
  });
});

describe("the GGUF's own template that cannot be used stops the start", () => {
  // A small scripted model (its template is any text we give): the start stops right after it loads. One start (about
  // 11 s here); a template that parses but fails the start probe takes the same path out of main.ts, and its message is
  // checked in integration/apply-template.test.ts.
  const LONE_NEWLINE = 198;
  const IM_END = 2;
  async function startWithOwnTemplate(name: string, chatTemplate: string) {
    const model = join(dir, `${name}.gguf`);
    await writeScriptedModel(model, {chatTemplate, trigger: LONE_NEWLINE, script: [IM_END]});
    const r = spawnSync(process.execPath, serverArgs(), {cwd: ROOT, encoding: "utf8", timeout: 120_000,
      env: {...process.env, UV_THREADPOOL_SIZE: "1", SVC_PORT: "0", SVC_CTX_SIZE: "2048", SVC_PARALLEL: "1", SVC_PROGRESS: "lines", SVC_MODEL: model,
        SVC_CHAT_TEMPLATE: ""}});
    return {model, r};
  }

  test("a syntax error: exit code 2, one line naming the model file, tokenizer.chat_template, the line, the error and the way out", async () => {
    const {model, r} = await startWithOwnTemplate("broken-own", "{%- for m in messages %}\n{{- m.content }}\n{%- if m.role %}\n{%- endfor %}\n");
    assert.equal(r.status, 2, r.stderr);
    const lines = r.stderr.split("\n").filter((l) => l.startsWith("svc: ") && l.includes(model));
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, new RegExp(`^svc: the model's own chat template cannot be used: ${model}, tokenizer.chat_template: line 4: does not parse: ` +
      ".*endfor.*; give a working template with SVC_CHAT_TEMPLATE=<file> \\(or --chat-template-file <file>\\)$"));
    assert.match(r.stderr, /^svc: not started$/m);
  });
});
