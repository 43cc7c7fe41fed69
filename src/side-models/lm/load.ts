// Loading a ChatML decoder side model for scoring: resolve its source, share its file's model, give it a
// scorer context of its own, and refuse a file whose template is not ChatML (the prompt formats here are
// written in it).

import {resolveModel} from "../../models/resolve.ts";
import type {SideModelDef} from "../registry.ts";
import type {SideModelContext} from "../side-models.ts";
import {assertChatMl} from "./labels.ts";
import {LmScorer} from "./scorer.ts";

export async function loadChatMlScorer(def: SideModelDef, ctx: SideModelContext, contextSize: number): Promise<{path: string; scorer: LmScorer}> {
  const resolved = await resolveModel(def.source, {modelsDir: ctx.modelsDir, logger: ctx.logger, progress: ctx.progress});
  const model = await ctx.loadModel(resolved.path);
  const scorer = await LmScorer.create(model, ctx, contextSize);
  try {
    assertChatMl(scorer, def.id);
  } catch (err) {
    await scorer.close();
    throw err;
  }
  return {path: resolved.path, scorer};
}
