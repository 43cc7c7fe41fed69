// The scripted-model fixture (test/fixtures/scripted-model) through the real server: a built GGUF loads,
// and greedy decoding after the generation prompt writes exactly the scripted reply, token for token.
// Checked on the raw completions route, whose output is the model's text untouched; the chat route is
// checked only for reaching the same tokens, because how chat replies are shaped (reasoning, tool calls)
// is not this fixture's business.

import assert from "node:assert/strict";
import {mkdtemp, rm, stat} from "node:fs/promises";
import {tmpdir} from "node:os";
import {join} from "node:path";
import {after, before, describe, test} from "node:test";
import {
  buildScenario, spellScript, spellUnique, tokenizerSource, vocabIndex, writeScriptedModel, type Scenario,
} from "../fixtures/scripted-model/build.ts";
import {GENERATION_PROMPT, QWEN3_CODER_STYLE_TEMPLATE} from "../fixtures/scripted-model/templates.ts";
import {post, startServer, type RunningServer} from "../../support/server.ts";

const PLAIN_REPLY = "<think>\nhi\n</think>\n\nOK<|im_end|>";
const TOOL_REPLY = "<think>\nweather?\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n" +
  "</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call><|im_end|>";
const NEWLINE = 198; // the one token SmolLM2 has for a lone "\n"
const IM_END = 2;

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "svc-scripted-"));
});
after(async () => {
  if (dir) await rm(dir, {recursive: true, force: true});
});

describe("scripted model builder", () => {
  test("the ChatML generation prompt ends in the lone-newline token, the trigger", async () => {
    const s = await buildScenario(dir, "trigger-probe", {chatTemplate: QWEN3_CODER_STYLE_TEMPLATE, reply: "OK<|im_end|>"});
    assert.equal(s.trigger, NEWLINE);
    assert.deepEqual(s.extraTokens, [], "a reply without repeats needs no minted tokens");
  });

  test("spellUnique refuses what the real vocabulary cannot spell; spellScript mints tokens instead", async () => {
    const src = await tokenizerSource();
    const vocab = vocabIndex(src.tokens, src.tokenTypes);
    // Two lone newlines, and the only "\n" token is the trigger.
    assert.throws(() => spellUnique(PLAIN_REPLY, vocab, new Set([NEWLINE])), /cannot be spelled without repeating a token or using 198 \("\\n"\)/);
    const {ids, extraTokens} = spellScript(TOOL_REPLY, vocab, new Set([NEWLINE]));
    assert.equal(new Set(ids).size, ids.length, "every token once");
    assert.ok(!ids.includes(NEWLINE));
    assert.equal(ids.at(-1), IM_END);
    const all = [...src.tokens, ...extraTokens];
    const bytes = ids.slice(0, -1).flatMap((id) => [...all[id]!].map((ch) => byteOf(ch)));
    assert.equal(Buffer.from(bytes).toString("utf8") + "<|im_end|>", TOOL_REPLY);
  });

  test("writeScriptedModel refuses a token that would have to continue two ways", async () => {
    const path = join(dir, "refused.gguf");
    await assert.rejects(writeScriptedModel(path, {chatTemplate: QWEN3_CODER_STYLE_TEMPLATE, trigger: NEWLINE, script: [13663, NEWLINE, IM_END]}),
      /token 198 \("\\n"\) is a predecessor twice/);
    await assert.rejects(stat(path), {code: "ENOENT"});
  });
});

/** Starts the server on a scenario and checks the raw route writes the script exactly. */
function scenarioSuite(name: string, reply: string): void {
  describe(`scripted model on the server: ${name}`, () => {
    let scenario: Scenario;
    let server: RunningServer;
    before(async () => {
      scenario = await buildScenario(dir, name, {chatTemplate: QWEN3_CODER_STYLE_TEMPLATE, reply});
      server = await startServer({SVC_MODEL: scenario.path});
    });
    after(async () => {
      await server?.stop();
    });

    const expected = reply.replace(/<\|im_end\|>$/, "");
    const prompt = `<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n${GENERATION_PROMPT}`;

    test("the file is small and loads as the server's model", async () => {
      const {size} = await stat(scenario.path);
      assert.ok(size < 40e6, `${size} bytes`);
      const models = await server.client.models.list();
      assert.equal(models.data.length, 1);
    });

    test("raw completions write the scripted reply exactly, ending at <|im_end|>", async () => {
      const res = await server.client.completions.create({model: "x", prompt, temperature: 0, max_tokens: 100});
      assert.equal(res.choices[0]!.text, expected);
      assert.equal(res.choices[0]!.finish_reason, "stop");
      assert.equal(res.usage!.completion_tokens, scenario.script.length - 1, "the closing <|im_end|> is not counted");
    });

    test("the server's own tokenizer ends the prompt with the trigger", async () => {
      const tok = await post(`${server.url}/tokenize`, {content: prompt, parse_special: true});
      assert.equal(tok.body.tokens.at(-1), scenario.trigger);
    });

    test("a prompt not ending in the trigger gets an empty reply (every logit 0, token 0 ends generation)", async () => {
      const res = await server.client.completions.create({model: "x", prompt: "<|im_start|>user\nhi", temperature: 0, max_tokens: 20});
      assert.equal(res.choices[0]!.text, "");
    });

    test("a chat request renders the template up to the trigger and gets the whole script", async () => {
      const res = await server.client.chat.completions.create({
        model: "x", messages: [{role: "user", content: "What is the weather in Paris?"}], temperature: 0, max_tokens: 100,
      });
      assert.equal(res.usage!.completion_tokens, scenario.script.length - 1);
    });
  });
}

scenarioSuite("plain", PLAIN_REPLY);
scenarioSuite("tool-call", TOOL_REPLY);

// GPT-2's byte-level alphabet, inverted independently of the builder so the check is not circular.
const UNICODE_TO_BYTE = (() => {
  const map = new Map<string, number>();
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    map.set(String.fromCharCode(printable ? b : 256 + shifted++), b);
  }
  return map;
})();

function byteOf(ch: string): number {
  const b = UNICODE_TO_BYTE.get(ch);
  if (b === undefined) throw new Error(`not a byte-level character: ${JSON.stringify(ch)}`);
  return b;
}
