// The chat route's entry to the streaming guard: reads the ask (400 before the reply starts) and opens the
// watcher serveGeneration drives. A request that does not ask gets null and is served exactly as before.

import type {FastifyRequest} from "fastify";
import type {GenerationRequest} from "../../../core/generation.ts";
import type {ServerDeps} from "../../deps.ts";
import {ChatGuard, lastUserText, type ChatIdentity} from "./chat-guard.ts";
import {GUARD_HEADER, parseGuardAsk} from "./options.ts";

export {ChatGuard} from "./chat-guard.ts";

export function openChatGuard(deps: Pick<ServerDeps, "config" | "side">, req: FastifyRequest, guardField: unknown, request: GenerationRequest,
  who: ChatIdentity): ChatGuard | null {
  const ask = parseGuardAsk(guardField, req.headers[GUARD_HEADER], deps.side, {flag: deps.config.guardFlag});
  if (!ask) return null;
  const userText = request.prompt.kind === "chat" ? lastUserText(request.prompt.messages) : "";
  return new ChatGuard(ask, userText, who, {streams: deps.config.guardStreams, lagChars: deps.config.guardLag, finalS: deps.config.guardFinal});
}
