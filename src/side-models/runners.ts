// Which runner serves each kind of side model. One line per kind; the runners live beside this file.

import type {SideKind} from "./registry.ts";
import type {RunnerFactory} from "./side-models.ts";

export const RUNNER_FACTORIES: Partial<Record<SideKind, RunnerFactory>> = {
};
