// Which strict tools are enforced is decided by the call syntax of the model the request is routed to, not by JSON
// alone: in-process over the engine double, the same strict tool (a parameter named "a>b") is enforced on the double's
// ChatML template (the generic JSON form, where the name is a JSON string) and served unenforced on a Qwen3-Coder-style
// template, whose XML markup `<parameter=a>b>` cannot hold it: logged with the syntax's reason and counted in /health,
// on each route's decoder. The per-shape verdicts themselves are in unit/grammar/grammar-tool-calls.test.ts.

import assert from "node:assert/strict";
import {after, before, describe, test} from "node:test";
import {startInProcessApp, type InProcessApp} from "../doubles/app.ts";
import {QWEN3_CODER_STYLE_TEMPLATE} from "../fixtures/scripted-model/templates.ts";

const PARAMETERS = {type: "object", properties: {"a>b": {type: "string"}, city: {type: "string"}}, required: ["city"]};
const chat = {messages: [{role: "user", content: "Weather?"}], max_tokens: 4,
  tools: [{type: "function", function: {name: "get_weather", parameters: PARAMETERS, strict: true}}]};
const messages = {model: "m", max_tokens: 4, messages: [{role: "user", content: "Weather?"}],
  tools: [{name: "get_weather", input_schema: PARAMETERS, strict: true}]};
const responses = {input: "Weather?", max_output_tokens: 16, tools: [{type: "function", name: "get_weather", parameters: PARAMETERS, strict: true}]};

for (const [template, family, enforced] of [[undefined, "generic", true], [QWEN3_CODER_STYLE_TEMPLATE, "qwen3-coder", false]] as const) {
  describe(`a strict tool with a parameter named "a>b", ${family} calls`, () => {
    let server: InProcessApp;
    before(async () => {
      server = await startInProcessApp({env: {SVC_PARALLEL: "1"}, captureLogs: true, script: () => "OK",
        ...(template ? {engine: {chatTemplate: template}} : {})});
    });
    after(async () => {
      await server?.close();
    });

    test(enforced ? "is enforced: nothing logged or counted" : "is served unenforced on every route, logged with the syntax's reason and counted", async () => {
      assert.equal((await server.get("/health")).body.chat_template.family.id, family);
      for (const [path, body] of [["/v1/chat/completions", chat], ["/v1/messages", messages], ["/v1/responses", responses]] as const) {
        const res = await server.post(path, body);
        assert.equal(res.status, 200, `${path}: ${res.text}`);
      }
      const strict = (await server.get("/health")).body.structured_output.strict_tools;
      assert.equal(strict.unenforced_total, enforced ? 0 : 3);
      const warned = server.logs.filter((l) => /strict tool served without enforcement/.test(l));
      if (enforced) assert.deepEqual(warned, []);
      else {
        assert.equal(warned.length, 3, warned.join("\n"));
        for (const l of warned) assert.match(l, /get_weather.*the parameter name \\"a>b\\" cannot be written in this tool-call syntax/);
      }
    });
  });
}
