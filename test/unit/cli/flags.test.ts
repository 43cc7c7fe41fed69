// The command line: a flag per setting, generated from the settings table, llama-server's short spellings, the
// positional model, on/off flags, and refusals that name the flag and the setting's rule.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {CommandLineError, FLAGS, parseCommandLine} from "../../../src/cli/flags.ts";
import {helpText} from "../../../src/cli/help.ts";
import {SETTINGS, flagOf} from "../../../src/config/settings.ts";

function problems(argv: string[]): string[] {
  try {
    parseCommandLine(argv);
  } catch (err) {
    assert.ok(err instanceof CommandLineError, String(err));
    return err.problems;
  }
  assert.fail(`${argv.join(" ")} was accepted`);
}

function envOf(argv: string[]): Record<string, string> {
  const c = parseCommandLine(argv);
  assert.equal(c.kind, "serve");
  return c.kind === "serve" ? c.env : {};
}

describe("flags", () => {
  test("every setting has exactly one long flag, and no two settings share a spelling", () => {
    assert.equal(FLAGS.length, Object.keys(SETTINGS).length);
    const spellings = FLAGS.flatMap((f) => [f.long, ...f.aliases]);
    assert.equal(new Set(spellings).size, spellings.length);
    assert.equal(flagOf(SETTINGS.ctxSize), "--ctx-size");
    assert.equal(flagOf(SETTINGS.shutdownGrace), "--shutdown-grace-s");
  });

  test("serve MODEL and llama-server's spellings set the settings' variables", () => {
    assert.deepEqual(envOf(["serve", "m.gguf", "-c", "32768", "-np", "2", "-t", "4", "--port", "8080", "--host=0.0.0.0"]),
      {SVC_MODEL: "m.gguf", SVC_CTX_SIZE: "32768", SVC_PARALLEL: "2", SVC_THREADS: "4", SVC_PORT: "8080", SVC_HOST: "0.0.0.0"});
    assert.deepEqual(envOf(["-m", "x.gguf", "--alias", "mine", "--chat-template-file", "t.jinja"]),
      {SVC_MODEL: "x.gguf", SVC_MODEL_ID: "mine", SVC_CHAT_TEMPLATE: "t.jinja"});
    assert.deepEqual(envOf([]), {}, "no flags: the environment and the defaults");
  });

  test("on/off flags take no value: --fork, --no-fork, --fork=0", () => {
    assert.deepEqual(envOf(["--fork", "m.gguf"]), {SVC_FORK: "1", SVC_MODEL: "m.gguf"}, "the word after an on/off flag is not its value");
    assert.deepEqual(envOf(["--no-grammar"]), {SVC_GRAMMAR: "0"});
    assert.deepEqual(envOf(["--fork=0"]), {SVC_FORK: "0"});
  });

  test("help and version", () => {
    assert.deepEqual(parseCommandLine(["--help"]), {kind: "help"});
    assert.deepEqual(parseCommandLine(["serve", "-h"]), {kind: "help"});
    assert.deepEqual(parseCommandLine(["help"]), {kind: "help"});
    assert.deepEqual(parseCommandLine(["--version"]), {kind: "version"});
    const help = helpText("1.2.3");
    for (const f of FLAGS) {
      assert.ok(help.includes(f.long), f.long);
      assert.ok(help.includes(f.setting.name), f.setting.name);
    }
    assert.ok(help.split("\n").every((l) => l.length <= 100 || !l.includes(" ")), "lines wrap at 100 columns");
  });

  test("a bad value names the flag, the value, the rule and the variable", () => {
    assert.deepEqual(problems(["-c", "12"]), [`-c "12": ${SETTINGS.ctxSize.rule} (SVC_CTX_SIZE)`]);
    assert.deepEqual(problems(["--port=x"]), [`--port "x": ${SETTINGS.port.rule} (SVC_PORT)`]);
    assert.deepEqual(problems(["--fork=maybe"]), [`--fork "maybe": ${SETTINGS.fork.rule} (SVC_FORK)`]);
    assert.deepEqual(problems(["--port"]), [`--port: needs a value; ${SETTINGS.port.rule}`]);
  });

  test("an unknown flag is refused with the nearest spelling; its value is not taken for the model", () => {
    assert.deepEqual(problems(["--ctx-sise", "512", "m.gguf"]),
      ["--ctx-sise: not a flag of svc, did you mean --ctx-size? (svc --help lists every flag)"]);
    assert.deepEqual(problems(["--flux-capacitor"]), ["--flux-capacitor: not a flag of svc (svc --help lists every flag)"]);
    assert.deepEqual(problems(["--no-port"]), ["--no-port: not a flag of svc (svc --help lists every flag)"], "only on/off flags have a --no- form");
  });

  test("a setting given twice, or two models, is refused", () => {
    assert.deepEqual(problems(["-c", "512", "--ctx-size", "1024"]), ["--ctx-size: sets SVC_CTX_SIZE, which -c already set; give it once"]);
    assert.deepEqual(problems(["a.gguf", "b.gguf"]), [`"b.gguf": a second MODEL; svc serves one main model (the first given is "a.gguf")`]);
  });
});
