// POST /v1/messages and /v1/messages/count_tokens (Messages-style route). Being built (issue 6).

import type {FastifyInstance} from "fastify";
import type {ServerDeps} from "../../deps.ts";

export function registerMessagesRoutes(_app: FastifyInstance, _deps: ServerDeps): void {}
