// The side-model routes. Registered only when SVC_NPU_MODELS names models: without it the server
// behaves as if none of them existed (the paths answer 404 like any unknown route).

import type {FastifyInstance} from "fastify";
import type {ServerDeps} from "../deps.ts";
import type {SideModels} from "../../side-models/side-models.ts";

export function registerSideRoutes(app: FastifyInstance, deps: ServerDeps, side: SideModels): void {
  void app;
  void deps;
  void side;
}
