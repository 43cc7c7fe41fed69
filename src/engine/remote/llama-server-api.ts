// The parts of llama-server's HTTP API the remote engine drives, at token level: /completion with token-id
// prompts (streamed), /tokenize, /props, /v1/models, /slots (save and restore) and /health. Only what we read is typed; the
// field names are llama-server's own (tools/server in the llama.cpp source node-llama-cpp bundles).

/** A replica could not be reached or answered outside the API: the engine takes it out and retries elsewhere. */
export class ReplicaUnreachableError extends Error {
  override readonly name = "ReplicaUnreachableError";
}

export interface ReplicaProps {
  total_slots: number;
  default_generation_settings: {n_ctx: number};
  chat_template?: string;
  model_path?: string;
  build_info?: string;
  /** With --mmproj: what the projector reads. */
  modalities?: {vision?: boolean; audio?: boolean};
  /** The text that stands for a picture in a multimodal prompt (random per start unless LLAMA_MEDIA_MARKER pins it). */
  media_marker?: string;
}

export interface ReplicaModelMeta {
  vocab_type?: number;
  n_vocab: number;
  n_ctx_train?: number;
  n_params?: number;
  size?: number;
}

/** One token's scores as /completion streams them with `n_probs` (raw distribution, before the sampler chain). */
export interface RemoteTokenProbs {
  id: number;
  logprob: number;
  top_logprobs: {id: number; logprob: number}[];
}

/** A streamed /completion chunk. A token whose text ends inside a UTF-8 character is not streamed on its own:
 * the next chunk carries only its own token, and `tokens_predicted` tells how many were decoded (remote-decode.ts). */
export interface CompletionChunk {
  content: string;
  tokens?: number[];
  stop: boolean;
  tokens_predicted?: number;
  tokens_evaluated?: number;
  stop_type?: "none" | "eos" | "limit" | "word";
  tokens_cached?: number;
  completion_probabilities?: RemoteTokenProbs[];
  prompt_progress?: {total: number; cache: number; processed: number; time_ms: number};
  timings?: {cache_n?: number; prompt_n?: number; prompt_ms?: number; predicted_n?: number; predicted_ms?: number};
  error?: {message?: string};
}

const CONTROL_TIMEOUT_MS = 10_000;
/** A slot file of a full context is tens of megabytes; a busy replica's disk may take a while. */
const SLOT_FILE_TIMEOUT_MS = 60_000;

async function call(base: string, path: string, init: RequestInit & {timeoutMs?: number} = {}): Promise<Response> {
  const signal = init.signal ?? AbortSignal.timeout(init.timeoutMs ?? CONTROL_TIMEOUT_MS);
  try {
    return await fetch(`${base}${path}`, {...init, signal});
  } catch (err) {
    if (init.signal?.aborted) throw err;
    const cause = (err as {cause?: {code?: string; message?: string}}).cause;
    throw new ReplicaUnreachableError(`${base}${path}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
}

async function json<T>(base: string, path: string, body?: unknown): Promise<T> {
  const res = await call(base, path, body === undefined ? {} : {method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body)});
  const text = await res.text();
  if (!res.ok) throw new ReplicaUnreachableError(`${base}${path}: HTTP ${res.status} ${text.slice(0, 200)}`);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ReplicaUnreachableError(`${base}${path}: not JSON (is this a llama-server?): ${text.slice(0, 120)}`);
  }
}

export const replicaApi = {
  async healthy(base: string, timeoutMs: number): Promise<boolean> {
    try {
      const res = await call(base, "/health", {timeoutMs});
      await res.body?.cancel();
      return res.ok;
    } catch {
      return false;
    }
  },
  props: (base: string) => json<ReplicaProps>(base, "/props"),
  async modelMeta(base: string): Promise<ReplicaModelMeta | null> {
    const list = await json<{data?: {meta?: ReplicaModelMeta}[]}>(base, "/v1/models");
    return list.data?.[0]?.meta ?? null;
  },
  /** Prompt positions of an Anthropic-style message list, as the replica counts them (pictures without encoding them). */
  async countTokens(base: string, messages: unknown[], signal?: AbortSignal): Promise<number> {
    const res = await call(base, "/v1/messages/count_tokens", {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({model: "svc", messages}), signal});
    const text = await res.text();
    if (!res.ok) throw new ReplicaRefusedError(`${base}/v1/messages/count_tokens: HTTP ${res.status} ${text.slice(0, 200)}`, res.status);
    return (JSON.parse(text) as {input_tokens: number}).input_tokens;
  },
  async tokenize(base: string, content: string): Promise<number[]> {
    const out = await json<{tokens: number[]}>(base, "/tokenize", {content, add_special: false, parse_special: true});
    return out.tokens;
  },

  /**
   * Saves a slot's KV and tokens to a file in the replica's --slot-save-path (the file name only: the replica picks
   * the directory), or loads one into a slot. A replica started without --slot-save-path refuses (HTTP 501).
   */
  async slotFile(base: string, slot: number, action: "save" | "restore", filename: string): Promise<{tokens: number}> {
    const res = await call(base, `/slots/${slot}?action=${action}`, {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({filename}), timeoutMs: SLOT_FILE_TIMEOUT_MS});
    const text = await res.text();
    if (!res.ok) throw new ReplicaRefusedError(`${base}/slots/${slot}?action=${action}: HTTP ${res.status} ${text.slice(0, 200)}`, res.status);
    const out = JSON.parse(text) as {n_saved?: number; n_restored?: number};
    return {tokens: (action === "save" ? out.n_saved : out.n_restored) ?? 0};
  },

  /** One /completion answered whole (not streamed): a one-token step whose candidates svc chooses among (remote-closing.ts). */
  async completeOnce(base: string, body: Record<string, unknown>, signal: AbortSignal): Promise<{completion_probabilities?: RemoteTokenProbs[]}> {
    const res = await call(base, "/completion", {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({...body, stream: false}), signal});
    const text = await res.text().catch((err: Error) => {
      throw new ReplicaUnreachableError(`${base}/completion: the reply broke (${err.message})`);
    });
    if (!res.ok) throw new ReplicaRefusedError(`${base}/completion: HTTP ${res.status} ${text.slice(0, 300)}`, res.status);
    try {
      return JSON.parse(text) as {completion_probabilities?: RemoteTokenProbs[]};
    } catch {
      throw new ReplicaUnreachableError(`${base}/completion: not JSON: ${text.slice(0, 120)}`);
    }
  },

  /** Streams /completion's chunks; throws ReplicaUnreachableError when the connection fails or the reply is not a stream. */
  async *complete(base: string, body: Record<string, unknown>, signal: AbortSignal): AsyncGenerator<CompletionChunk, void, void> {
    const res = await call(base, "/completion", {method: "POST", headers: {"content-type": "application/json"},
      body: JSON.stringify({...body, stream: true}), signal});
    if (!res.ok || !res.body) {
      const text = await res.text().catch(() => "");
      throw new ReplicaRefusedError(`${base}/completion: HTTP ${res.status} ${text.slice(0, 300)}`, res.status);
    }
    const decoder = new TextDecoder();
    let buffered = "";
    try {
      for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffered += decoder.decode(bytes, {stream: true});
        let end: number;
        while ((end = buffered.indexOf("\n\n")) >= 0) {
          const event = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          for (const line of event.split("\n")) {
            if (!line.startsWith("data: ")) continue;
            const chunk = JSON.parse(line.slice(6)) as CompletionChunk;
            if (chunk.error) throw new ReplicaRefusedError(`${base}/completion: ${chunk.error.message ?? "error"}`, 500);
            yield chunk;
          }
        }
      }
    } catch (err) {
      if (signal.aborted || err instanceof ReplicaRefusedError) throw err;
      throw new ReplicaUnreachableError(`${base}/completion: the stream broke (${(err as Error).message})`);
    }
  },
};

/** The replica answered but refused the request (a grammar it cannot parse, a prompt too long): not retried elsewhere. */
export class ReplicaRefusedError extends Error {
  override readonly name = "ReplicaRefusedError";
  constructor(message: string, readonly status: number) {
    super(message);
  }
}
