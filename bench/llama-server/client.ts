// The client side of bench:vs-llama-server: one streaming chat request, timed from this process the same
// way for both servers (both speak OpenAI chat streaming and both end with `timings`), and the statistics.

export interface Stream {
  start: number;
  /** Arrival of the first and last content delta (performance.now() ms). */
  first: number;
  last: number;
  /** Generated tokens (the server's own count) and prompt tokens; cached prompt tokens when the server says. */
  n: number;
  promptTokens: number;
  cachedTokens: number;
  text: string;
  /** The server's own decode rate (`timings.predicted_per_second`), when it sent timings. */
  serverDecodeTps: number;
}

export interface ChatBody {
  messages: {role: string; content: string}[];
  max_tokens: number;
  response_format?: unknown;
}

const REQUEST_TIMEOUT_MS = 600_000;

/**
 * A request that fails before any response (a kept-alive connection the server closed as it was reused: seen
 * with llama-server) is sent again once on a new connection; its clock starts again.
 */
async function post(base: string, body: ChatBody): Promise<{res: Response; start: number}> {
  for (let attempt = 0; ; attempt++) {
    const start = performance.now();
    try {
      const res = await fetch(`${base}/v1/chat/completions`, {
        method: "POST", headers: {"content-type": "application/json"}, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        body: JSON.stringify({model: "bench", ...body, stream: true, temperature: 0, stream_options: {include_usage: true}}),
      });
      return {res, start};
    } catch (err) {
      if (attempt >= 1) throw new Error(`${base}: ${(err as Error).message} (${String((err as {cause?: unknown}).cause ?? "")})`);
    }
  }
}

export async function streamChat(base: string, body: ChatBody): Promise<Stream> {
  const {res, start} = await post(base, body);
  if (!res.ok || !res.body) throw new Error(`${base}: HTTP ${res.status} ${await res.text()}`);
  const s: Stream = {start, first: 0, last: 0, n: 0, promptTokens: 0, cachedTokens: 0, text: "", serverDecodeTps: NaN};
  const dec = new TextDecoder();
  let buf = "";
  let deltas = 0;
  for await (const bytes of res.body as unknown as AsyncIterable<Uint8Array>) {
    const at = performance.now();
    buf += dec.decode(bytes, {stream: true});
    let sep: number;
    while ((sep = buf.indexOf("\n\n")) >= 0) {
      const ev = buf.slice(0, sep);
      buf = buf.slice(sep + 2);
      for (const line of ev.split("\n")) {
        if (!line.startsWith("data: ")) continue;
        const data = line.slice(6);
        if (data === "[DONE]") continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(`${base}: stream error ${JSON.stringify(j.error)}`);
        const content: string | undefined = j.choices?.[0]?.delta?.content;
        if (content) {
          if (s.first === 0) s.first = at;
          s.last = at;
          s.text += content;
          deltas++;
        }
        if (j.usage) {
          s.n = j.usage.completion_tokens;
          s.promptTokens = j.usage.prompt_tokens;
          s.cachedTokens = j.usage.prompt_tokens_details?.cached_tokens ?? s.cachedTokens;
        }
        if (j.timings && typeof j.timings.cache_n === "number") s.cachedTokens = j.timings.cache_n;
        if (j.timings && typeof j.timings.predicted_per_second === "number") s.serverDecodeTps = j.timings.predicted_per_second;
      }
    }
  }
  if (s.n === 0) s.n = deltas;
  return s;
}

/** The same request not streamed: the server's own decode rate from its `timings` (both servers send them). */
export async function chatOnceDecodeTps(base: string, body: ChatBody): Promise<number> {
  const res = await fetch(`${base}/v1/chat/completions`, {method: "POST", headers: {"content-type": "application/json"},
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS), body: JSON.stringify({model: "bench", ...body, stream: false, temperature: 0})});
  if (!res.ok) throw new Error(`${base}: HTTP ${res.status} ${await res.text()}`);
  const j = (await res.json()) as {timings?: {predicted_per_second?: number}};
  return j.timings?.predicted_per_second ?? NaN;
}

export const ttftMs = (s: Stream) => s.first - s.start;
/** Tokens after the first over first → last: decode without prefill. */
export const decodeTps = (s: Stream) => (s.n > 1 && s.last > s.first ? ((s.n - 1) * 1000) / (s.last - s.first) : NaN);
/** Every generated token over the span in which any stream was producing tokens. */
export const aggregateTps = (ss: Stream[]) => {
  const span = Math.max(...ss.map((s) => s.last)) - Math.min(...ss.map((s) => s.first));
  return span > 0 ? (ss.reduce((a, s) => a + s.n, 0) * 1000) / span : NaN;
};

export function median(xs: number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function percentile(xs: number[], p: number): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]! : NaN;
}
