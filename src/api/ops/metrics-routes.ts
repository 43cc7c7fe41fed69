// GET /metrics: the Prometheus text of src/observability/metrics.ts. Rendering reads plain fields only,
// so a scrape answers even while the engine is busy with a long prefill.

import type {FastifyInstance} from "fastify";

export function registerMetricsRoute(app: FastifyInstance, metrics: {render(): Promise<string>; contentType: string}): void {
  app.get("/metrics", async (_req, reply) => {
    const text = await metrics.render();
    return reply.header("content-type", metrics.contentType).send(text);
  });
}
