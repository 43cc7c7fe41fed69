// What a Claude Code request says about its session and thread, for the coding-agent mapping
// (SVC_FORK_MAP). Recorded from Claude Code 2.1.330 (test/fixtures/coding-agent/claude-code/):
// `X-Claude-Code-Session-Id` names the session (also inside `metadata.user_id`, a JSON string); a subagent
// adds `x-claude-code-agent-id`, constant over its requests; the main thread has none. Side requests:
// the session title (its `anthropic-beta` lacks Claude Code's own `claude-code-…` flag, which every
// conversation request carries), the quota probe (`max_tokens: 1`), and compaction, whose summary must not
// replace the conversation's state (`x-claude-code-compaction`, or the request-class headers Claude Code
// sends with CLAUDE_CODE_GATEWAY_HINT_HEADERS=1), and anything without tools.

import type {IncomingHttpHeaders} from "node:http";
import type {AgentThreadSignal} from "../../../sessions/coding-agent.ts";

const SIDE_CLASSES = new Set(["auxiliary", "compaction"]);
const MAIN_THREAD = "main";

function header(headers: IncomingHttpHeaders, name: string): string | null {
  const v = headers[name];
  const value = Array.isArray(v) ? v[0] : v;
  return typeof value === "string" && value.trim() !== "" ? value.trim() : null;
}

/** `metadata.user_id`: `{"device_id", "account_uuid", "session_id"}` as a JSON string (older builds: `…_session_<uuid>`). */
function sessionFromMetadata(body: unknown): string | null {
  const userId = (body as {metadata?: {user_id?: unknown}} | null)?.metadata?.user_id;
  if (typeof userId !== "string") return null;
  try {
    const parsed = JSON.parse(userId) as {session_id?: unknown};
    if (typeof parsed?.session_id === "string" && parsed.session_id !== "") return parsed.session_id;
  } catch {
    // not JSON: the older form
  }
  return /_session_([0-9a-f-]{8,})$/i.exec(userId)?.[1] ?? null;
}

export function claudeCodeThread(headers: IncomingHttpHeaders, body: unknown): AgentThreadSignal {
  const session = header(headers, "x-claude-code-session-id") ?? sessionFromMetadata(body);
  if (session === null) return {session: null, thread: null, side: false};
  const requestClass = header(headers, "x-claude-code-request-class");
  const beta = header(headers, "anthropic-beta");
  const {max_tokens: maxTokens, tools} = (body ?? {}) as {max_tokens?: unknown; tools?: unknown};
  const side = (requestClass !== null && SIDE_CLASSES.has(requestClass))
    || header(headers, "x-claude-code-compaction") !== null
    || (beta !== null && !beta.split(",").some((flag) => flag.trim().startsWith("claude-code-")))
    || maxTokens === 1
    // Every conversation request offers Claude Code's tools; titles and probes offer none.
    || !Array.isArray(tools) || tools.length === 0;
  return {session, thread: header(headers, "x-claude-code-agent-id") ?? MAIN_THREAD, side};
}
