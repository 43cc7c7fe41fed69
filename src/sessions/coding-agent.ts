// The coding-agent mapping (SVC_FORK=1 with SVC_FORK_MAP=coding-agent): the server names each conversation
// thread of a coding agent itself, so the client sets nothing. A thread is the client's session (a header or
// body field the dialect reads) plus the thread's opening (its system prompt and first user message, which
// every later request of that thread repeats), under the caller's API key. Each request of a thread starts
// from the thread's kept state and keeps its new end state; a thread's first request starts from the
// session's main thread, which the session service uses only when the request repeats that history (a
// subagent that copies its parent's context). Side requests (titles, summaries) start from their thread
// but never keep, so they cannot replace the conversation's state.
// Names are hashes: `agent.<key>.<session>.<thread>` — two API keys never share a name, and neither
// session ids nor prompts reach logs or listings in the clear.

import {createHash} from "node:crypto";
import type {PromptSpec, SessionNames} from "../core/generation.ts";
import type {HandleRegistry} from "./handles.ts";

/** What a dialect reads from a coding agent's request. */
export interface AgentThreadSignal {
  /** The client's session id; null: the request is not from a coding-agent session and stays ordinary. */
  session: string | null;
  /** A thread id the client sends itself (none of the known clients does for subagents; see the dialects). */
  thread: string | null;
  /** A side request of the session (title, summary, quota probe): starts from its thread, never kept. */
  side: boolean;
}

/** One request as a side-request table reads it (header names lower-cased, as Node delivers them). */
export interface AgentRequest {
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: unknown;
}

/**
 * One kind of side request a coding agent sends, recognised by what it is rather than by what it lacks
 * (a main-thread request without tools is still the conversation). `evidence` names the recorded traffic
 * (test/fixtures/coding-agent/) that shows the sign, so a new client version can be checked against it.
 */
export interface SideRequestCase {
  name: string;
  test: (req: AgentRequest) => boolean;
  evidence: string;
}

/** The first case of a dialect's table the request matches, or null: a conversation request. */
export function sideRequestCase(cases: readonly SideRequestCase[], req: AgentRequest): string | null {
  return cases.find((c) => c.test(req))?.name ?? null;
}

export const AGENT_NAME_PREFIX = "agent.";
/** Sessions (main thread each) and thread names remembered; the oldest are forgotten first. */
const MAX_SESSIONS = 256;
const MAX_THREADS = 1024;

function tag(text: string, length: number): string {
  return createHash("sha256").update(text).digest("hex").slice(0, length);
}

export class CodingAgentMap {
  /** `<key>.<session>` → the name of the session's first (main) thread. */
  private readonly mains = new Map<string, string>();
  /**
   * Names this mapping has asked to keep. Known from the moment the keep is asked, not when the registry
   * has it: the next request of a thread may arrive while the previous reply is still being kept, and the
   * session service makes a request from that name wait for it.
   */
  private readonly threads = new Set<string>();

  constructor(private readonly registry: HandleRegistry) {}

  /**
   * The session names for one request, or null when it carries no session. `opening` is the thread's
   * opening text (system prompt and first user message); `apiKey` the key the request was sent with.
   */
  names(signal: AgentThreadSignal, opening: string, apiKey: string | null): SessionNames | null {
    if (signal.session === null) return null;
    const sessionKey = `${tag(`key:${apiKey ?? ""}`, 8)}.${tag(`session:${signal.session}`, 12)}`;
    const name = `${AGENT_NAME_PREFIX}${sessionKey}.${tag(`thread:${signal.thread ?? opening}`, 12)}`;
    const known = this.threads.has(name);
    const main = this.mains.get(sessionKey) ?? null;
    if (signal.side) return {keep: null, from: known ? name : main};
    if (main === null) bounded(this.mains, MAX_SESSIONS).set(sessionKey, name);
    if (!known) {
      this.makeRoom();
      bounded(this.threads, MAX_THREADS).add(name);
    }
    // A thread already kept continues from itself; a new one tries its session's main thread (a subagent
    // that repeats its parent's history), else starts like any request.
    return {keep: name, from: known ? name : main !== null && main !== name ? main : null};
  }

  /**
   * With every handle taken, a new thread would be answered "full" and lose its state; the mapping
   * releases its own least recently used thread instead (never a name a client chose, never one in use).
   */
  private makeRoom(): void {
    const live = this.registry.list();
    if (live.length < this.registry.maxHandles) return;
    const oldest = live
      .filter((h) => h.name.startsWith(AGENT_NAME_PREFIX) && !h.in_use)
      .sort((a, b) => a.last_used.localeCompare(b.last_used))[0];
    if (oldest) this.registry.delete(oldest.name);
  }
}

/** Drops the oldest entry when the collection is at its limit (insertion order). */
function bounded<T extends Map<string, unknown> | Set<string>>(c: T, limit: number): T {
  if (c.size >= limit) c.delete(c.keys().next().value!);
  return c;
}

/**
 * A thread's opening: its system prompt and first user message, which every later request of the thread
 * repeats (a subagent's differ from its parent's). Empty for prompts that are not chat.
 */
export function threadOpening(prompt: PromptSpec): string {
  if (prompt.kind !== "chat") return "";
  const firstUser = prompt.messages.findIndex((m) => m.role === "user");
  const opening = prompt.messages.slice(0, firstUser < 0 ? prompt.messages.length : firstUser + 1);
  return JSON.stringify(opening.map((m) => [m.role, m.content]));
}
