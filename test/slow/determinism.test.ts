// The full determinism matrix (see test/e2e/determinism-suite.ts): 20 topics, flash attention on and off,
// and prompt-lookup speculation forced on against a reference without it.

import {exactGreedy} from "../e2e/determinism-suite.ts";

exactGreedy("flash attention on (default)", {}, false);
exactGreedy("flash attention off", {SVC_FLASH_ATTENTION: "0"}, false);
exactGreedy("prompt-lookup speculation on", {}, true);
