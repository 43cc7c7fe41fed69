// The whole server in-process over the engine double: the real config (loadConfig over the test's env only),
// the real GenerationPipeline and ChatTemplate (SVC_CHAT_TEMPLATE's file when set), sessions when SVC_FORK=1, and
// createApp's routes. Requests go through fastify's inject (no socket), or through a real listener on 127.0.0.1
// when a test needs one (SDK clients, hang-ups, uploads).

import {createApp, type App} from "../../src/app.ts";
import {loadConfig, type Config} from "../../src/config/config.ts";
import {createLogger, createMemoryLogger, type Logger} from "../../src/observability/log.ts";
import {buildModelHandle} from "../../src/pipeline/model-handle.ts";
import {SchemaCache} from "../../src/grammar/index.ts";
import {HandleRegistry} from "../../src/sessions/handles.ts";
import {loadChatTemplate, readTemplateFile} from "../../src/load-models.ts";
import {EngineDouble, type EngineDoubleOptions, type Script} from "./engine-double.ts";

export interface InProcessOptions {
  /** SVC_* settings; SVC_PORT=0 and SVC_CTX_SIZE=2048 (the e2e harness's) unless given. */
  env?: Record<string, string>;
  script?: Script;
  /** Default SVC_PARALLEL. */
  regions?: number;
  /** Default SVC_CTX_SIZE. */
  contextSize?: number;
  /** Anything else of the double (prefill cost, another chat template). */
  engine?: Omit<EngineDoubleOptions, "script" | "regions" | "contextSize">;
  /** Record the server's log lines in `logs` (otherwise the server is silent). */
  captureLogs?: boolean;
}

/** A response as a test reads it: status, headers, the parsed JSON body (undefined when not JSON) and the raw text. */
export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface InProcessApp {
  app: App;
  engine: EngineDouble;
  config: Config;
  /** The log lines, when captureLogs was set. */
  logs: string[];
  /** Resolves with the first log line matching re (captureLogs), or rejects after ms. */
  waitForLog(re: RegExp, ms?: number): Promise<string>;
  inject: App["server"]["inject"];
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<TestResponse>;
  get(path: string, headers?: Record<string, string>): Promise<TestResponse>;
  /** Starts a real listener on 127.0.0.1 (once) and returns its base URL. */
  listen(): Promise<string>;
  close(): Promise<void>;
}

export async function startInProcessApp(opts: InProcessOptions = {}): Promise<InProcessApp> {
  const config = loadConfig({SVC_PORT: "0", SVC_CTX_SIZE: "2048", SVC_LOG_LEVEL: "info", SVC_PROGRESS: "lines", ...opts.env});
  const memory = opts.captureLogs ? createMemoryLogger() : null;
  const logger: Logger = memory ?? createLogger("silent");
  const engine = new EngineDouble({
    ...opts.engine,
    script: opts.script,
    regions: opts.regions ?? config.parallel,
    contextSize: opts.contextSize ?? config.ctxSize,
    promptPiece: opts.engine?.promptPiece ?? config.promptPiece,
    promptCache: opts.engine?.promptCache ?? config.promptCache,
  });
  // As load-models.ts makes it (SVC_CHAT_TEMPLATE's file or the double's "GGUF" template), on the JS engine only: the
  // double has no llama.cpp addon, so a template only llama.cpp's Jinja engine runs does not load here.
  const template = loadChatTemplate({info: engine.info, file: config.chatTemplate ? readTemplateFile(config.chatTemplate) : null, modelPath: "engine-double",
    logger});
  // As load-models.ts builds them, with no directory (a temp dir the registry removes on close).
  const sessions = config.fork
    ? await HandleRegistry.open({dir: null, maxHandles: config.forkHandles, ttlS: config.forkTtl, logger,
      identity: {model: "engine-double", engine: engine.info.version, kv: "none", positions_per_region: String(engine.info.contextSize)}})
    : null;
  const main = buildModelHandle({
    identity: {id: config.modelId, path: "engine-double", sha256: null, source: "engine-double"},
    engine,
    template,
    sessions,
    pipeline: {queueTimeoutMs: config.queueTimeout * 1000, maxTokensDefault: config.maxTokensDefault, schemaEscape: config.schemaEscape,
      maxToolCalls: config.maxToolCalls, structured: {schemas: new SchemaCache(), enabled: config.grammar}},
    logger,
  });
  const app = await createApp(config, {main, side: null}, logger);
  let url: Promise<string> | null = null;
  const inject = app.server.inject.bind(app.server) as App["server"]["inject"];
  const request = async (method: "GET" | "POST", path: string, body: unknown, headers: Record<string, string>): Promise<TestResponse> => {
    const payload = body === undefined ? undefined : typeof body === "string" || body instanceof Uint8Array ? Buffer.from(body) : JSON.stringify(body);
    const res = await app.server.inject({method, url: path, headers: method === "POST" ? {"content-type": "application/json", ...headers} : headers,
      ...(payload !== undefined ? {payload} : {})});
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out.set(k, Array.isArray(v) ? v.join(", ") : String(v));
    let parsed: unknown;
    try {
      parsed = JSON.parse(res.body);
    } catch {
      parsed = undefined;
    }
    return {status: res.statusCode, headers: out, body: parsed, text: res.body};
  };
  return {
    app,
    engine,
    config,
    logs: memory?.lines ?? [],
    waitForLog: async (re, ms = 10_000) => {
      if (!memory) throw new Error("waitForLog needs captureLogs: true");
      const end = Date.now() + ms;
      for (;;) {
        const hit = memory.lines.find((l) => re.test(l));
        if (hit) return hit;
        if (Date.now() > end) throw new Error(`no log line matching ${re} within ${ms} ms; last lines:\n${memory.lines.slice(-10).join("\n")}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    inject,
    post: (path, body, headers = {}) => request("POST", path, body, headers),
    get: (path, headers = {}) => request("GET", path, undefined, headers),
    listen: () => (url ??= app.server.listen({host: "127.0.0.1", port: 0}).then(() => {
      const addr = app.server.server.address();
      if (!addr || typeof addr === "string") throw new Error("no TCP address");
      return `http://127.0.0.1:${addr.port}`;
    })),
    close: () => app.close(),
  };
}
