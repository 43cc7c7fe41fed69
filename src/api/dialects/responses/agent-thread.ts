// What a Codex request says about its session and thread, for the coding-agent mapping (SVC_FORK_MAP).
// Recorded from Codex 0.169 (test/fixtures/coding-agent/codex/): `session-id` carries the root thread id
// (the same for subagents; also `prompt_cache_key` in the body), `thread-id` the thread itself (a subagent
// has its own, with `x-codex-parent-thread-id`). Side requests are the cases of CODEX_SIDE_REQUESTS, each
// recognised by what it is; their summaries must not replace the thread's state.

import type {IncomingHttpHeaders} from "node:http";
import {sideRequestCase, type AgentRequest, type AgentThreadSignal, type SideRequestCase} from "../../../sessions/coding-agent.ts";

/** The opening of Codex's compaction prompt (its last user input item). */
const COMPACTION_OPENING = "You are performing a CONTEXT CHECKPOINT COMPACTION.";

function header(headers: AgentRequest["headers"], ...names: string[]): string | null {
  for (const name of names) {
    const v = headers[name];
    const value = Array.isArray(v) ? v[0] : v;
    if (typeof value === "string" && value.trim() !== "") return value.trim();
  }
  return null;
}

function turnMetadata(headers: AgentRequest["headers"]): Record<string, unknown> {
  const raw = header(headers, "x-codex-turn-metadata");
  if (!raw) return {};
  try {
    const parsed: unknown = JSON.parse(raw);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed as Record<string, unknown> : {};
  } catch {
    return {};
  }
}

/** The text of the last input item when it is a user message (a string, or input_text parts). */
function lastUserText(body: unknown): string {
  const input = (body as {input?: unknown} | null)?.input;
  if (typeof input === "string") return input;
  if (!Array.isArray(input)) return "";
  const last = input.at(-1) as {role?: unknown; content?: unknown} | undefined;
  if (last?.role !== "user") return "";
  if (typeof last.content === "string") return last.content;
  if (!Array.isArray(last.content)) return "";
  return last.content.map((p) => (typeof (p as {text?: unknown})?.text === "string" ? (p as {text: string}).text : "")).join("\n");
}

/** Codex's side requests; the first match is the reason reported. A subagent (`collab_spawn`) is a thread, not one. */
export const CODEX_SIDE_REQUESTS: readonly SideRequestCase[] = [
  {
    name: "compaction",
    test: ({headers, body}) => turnMetadata(headers).request_kind === "compaction"
      || header(headers, "x-openai-subagent") === "compact"
      || lastUserText(body).startsWith(COMPACTION_OPENING),
    evidence: "codex/compaction.json (automatic pre-turn compaction): `x-codex-turn-metadata` says "
      + "`request_kind: \"compaction\"` (conversation files say `turn`), `tools: []`, last input \"You are performing a "
      + "CONTEXT CHECKPOINT COMPACTION…\"; after-compaction.json, the next turn, is a conversation request. "
      + "`x-openai-subagent: compact` (older builds) is not in the recorded traffic",
  },
  {
    name: "memory consolidation",
    test: ({headers}) => header(headers, "x-openai-subagent") === "memory_consolidation",
    evidence: "not in the recorded traffic: Codex's name for its memory-consolidation subagent in "
      + "`x-openai-subagent` (recorded subagents send `collab_spawn`)",
  },
];

/** Which side request this is (a case name of CODEX_SIDE_REQUESTS), or null for a conversation request. */
export function codexSideRequest(headers: IncomingHttpHeaders, body: unknown): string | null {
  return sideRequestCase(CODEX_SIDE_REQUESTS, {headers, body});
}

export function codexThread(headers: IncomingHttpHeaders, body: unknown): AgentThreadSignal {
  const meta = turnMetadata(headers);
  const cacheKey = (body as {prompt_cache_key?: unknown} | null)?.prompt_cache_key;
  const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
  const session = header(headers, "session-id", "session_id") ?? str(meta.session_id) ?? str(cacheKey);
  const thread = header(headers, "thread-id", "thread_id") ?? str(meta.thread_id);
  return {session, thread, side: codexSideRequest(headers, body) !== null};
}
