// What a Claude Code request says about its session and thread, for the coding-agent mapping
// (SVC_FORK_MAP). Recorded from Claude Code 2.1.330 (test/fixtures/coding-agent/claude-code/):
// `X-Claude-Code-Session-Id` names the session (also inside `metadata.user_id`, a JSON string); a subagent
// adds `x-claude-code-agent-id`, constant over its requests; the main thread has none. Side requests are
// the cases of CLAUDE_CODE_SIDE_REQUESTS, each recognised by what it is: a conversation request is kept
// whether or not it offers tools (`claude --tools ""` sends none).

import type {IncomingHttpHeaders} from "node:http";
import {sideRequestCase, type AgentRequest, type AgentThreadSignal, type SideRequestCase} from "../../../sessions/coding-agent.ts";

const MAIN_THREAD = "main";
/** The opening and the task line of Claude Code's compaction prompt (its last user message). */
const COMPACTION_OPENING = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.";
const COMPACTION_TASK = "create a detailed summary of the conversation so far";
const TITLE_SYSTEM = "You are naming a coding session";

function header(headers: AgentRequest["headers"], name: string): string | null {
  const v = headers[name];
  const value = Array.isArray(v) ? v[0] : v;
  return typeof value === "string" && value.trim() !== "" ? value.trim() : null;
}

/** A system prompt or message content: a string or a list of blocks; their texts joined. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((b) => (typeof (b as {text?: unknown})?.text === "string" ? (b as {text: string}).text : "")).join("\n");
}

function offersTools(body: unknown): boolean {
  const tools = (body as {tools?: unknown} | null)?.tools;
  return Array.isArray(tools) && tools.length > 0;
}

function lastUserText(body: unknown): string {
  const messages = (body as {messages?: unknown} | null)?.messages;
  if (!Array.isArray(messages)) return "";
  const last = messages.at(-1) as {role?: unknown; content?: unknown} | undefined;
  return last?.role === "user" ? textOf(last.content) : "";
}

/**
 * Claude Code's side requests. Order matters only for the reason reported (the first match); every case
 * makes the request a side one. The hint headers (`x-claude-code-request-class`, `x-claude-code-compaction`)
 * come only with CLAUDE_CODE_GATEWAY_HINT_HEADERS=1, so each case that has them also has a sign that is
 * always sent.
 */
export const CLAUDE_CODE_SIDE_REQUESTS: readonly SideRequestCase[] = [
  {
    name: "title",
    // The beta sign counts only without tools: CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS (set for some gateways) may
    // cut the flags of conversation requests too, and a conversation with its tools must stay kept then.
    test: ({headers, body}) => {
      const beta = header(headers, "anthropic-beta");
      return (beta !== null && !beta.split(",").some((flag) => flag.trim().startsWith("claude-code-")) && !offersTools(body))
        || textOf((body as {system?: unknown} | null)?.system).includes(TITLE_SYSTEM);
    },
    evidence: "claude-code/side-title.json: `anthropic-beta` without a `claude-code-…` flag, where every conversation "
      + "file (main, subagent, fork, compaction; 2.1.330 and 2.1.332) carries `claude-code-20250219`; `tools: []`; "
      + "system \"You are naming a coding session…\"; the small model, a json_schema output format",
  },
  {
    name: "quota probe",
    test: ({body}) => (body as {max_tokens?: unknown} | null)?.max_tokens === 1,
    evidence: "not in the recorded traffic (it is sent before a session starts, outside the recorded runs); "
      + "Claude Code checks the key with `max_tokens: 1` and one user message \"quota\" (issue "
      + "teremterem/claude-code-gpt-5-codex#79); no conversation file asks for fewer than 128000",
  },
  {
    name: "compaction",
    test: ({headers, body}) => header(headers, "x-claude-code-compaction") !== null
      || header(headers, "x-claude-code-request-class") === "compaction"
      || (lastUserText(body).startsWith(COMPACTION_OPENING) && lastUserText(body).includes(COMPACTION_TASK)),
    evidence: "claude-code/compaction.json (`/compact`): hint headers `x-claude-code-compaction: manual`, "
      + "`x-claude-code-request-class: compaction`; always: the main thread's system, tools and history plus a last "
      + "user message \"CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. … create a detailed summary of the "
      + "conversation so far…\"; after-compaction.json, the next turn, is a conversation request",
  },
  {
    name: "auxiliary",
    test: ({headers}) => header(headers, "x-claude-code-request-class") === "auxiliary",
    evidence: "claude-code/side-title.json: hint header `x-claude-code-request-class: auxiliary` (conversation files "
      + "with hint headers say `main` or `subagent`)",
  },
];

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

/** Which side request this is (a case name of CLAUDE_CODE_SIDE_REQUESTS), or null for a conversation request. */
export function claudeCodeSideRequest(headers: IncomingHttpHeaders, body: unknown): string | null {
  return sideRequestCase(CLAUDE_CODE_SIDE_REQUESTS, {headers, body});
}

export function claudeCodeThread(headers: IncomingHttpHeaders, body: unknown): AgentThreadSignal {
  const session = header(headers, "x-claude-code-session-id") ?? sessionFromMetadata(body);
  if (session === null) return {session: null, thread: null, side: false};
  const side = claudeCodeSideRequest(headers, body) !== null;
  return {session, thread: header(headers, "x-claude-code-agent-id") ?? MAIN_THREAD, side};
}
