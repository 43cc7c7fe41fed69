// What a Codex request says about its session and thread, for the coding-agent mapping (SVC_FORK_MAP).
// Recorded from Codex 0.169 (test/fixtures/coding-agent/codex/): `session-id` carries the root thread id
// (the same for subagents; also `prompt_cache_key` in the body), `thread-id` the thread itself (a subagent
// has its own, with `x-codex-parent-thread-id`), and the `x-codex-turn-metadata` JSON says
// `request_kind: "compaction"` for a context checkpoint, which is a side request: its summary must not
// replace the thread's state. `x-openai-subagent: compact | memory_consolidation` marks the same from
// older builds.

import type {IncomingHttpHeaders} from "node:http";
import type {AgentThreadSignal} from "../../../sessions/coding-agent.ts";

const SIDE_SUBAGENTS = new Set(["compact", "memory_consolidation"]);

function header(headers: IncomingHttpHeaders, ...names: string[]): string | null {
  for (const name of names) {
    const v = headers[name];
    const value = Array.isArray(v) ? v[0] : v;
    if (typeof value === "string" && value.trim() !== "") return value.trim();
  }
  return null;
}

function turnMetadata(headers: IncomingHttpHeaders): Record<string, unknown> {
  const raw = header(headers, "x-codex-turn-metadata");
  if (!raw) return {};
  try {
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed as Record<string, unknown> : {};
  } catch {
    return {};
  }
}

export function codexThread(headers: IncomingHttpHeaders, body: unknown): AgentThreadSignal {
  const meta = turnMetadata(headers);
  const cacheKey = (body as {prompt_cache_key?: unknown} | null)?.prompt_cache_key;
  const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
  const session = header(headers, "session-id", "session_id") ?? str(meta.session_id) ?? str(cacheKey);
  const thread = header(headers, "thread-id", "thread_id") ?? str(meta.thread_id);
  const subagent = header(headers, "x-openai-subagent");
  const side = meta.request_kind === "compaction" || (subagent !== null && SIDE_SUBAGENTS.has(subagent));
  return {session, thread, side};
}
