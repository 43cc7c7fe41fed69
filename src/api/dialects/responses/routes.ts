// POST /v1/responses (Responses-style route). Being built (issue 6).

import type {FastifyInstance} from "fastify";
import type {ServerDeps} from "../../deps.ts";

export function registerResponsesRoutes(_app: FastifyInstance, _deps: ServerDeps): void {}
