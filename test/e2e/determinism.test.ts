// Exactness on every `npm test`: the default setup (flash attention on, auto speculation) on the first 8 of
// the 20 topics, batched, warm and resumed after a seal. The full matrix is test/slow/determinism.test.ts.

import {exactGreedy} from "./determinism-suite.ts";

exactGreedy("flash attention on (default), 8 topics", {}, false, 8);
