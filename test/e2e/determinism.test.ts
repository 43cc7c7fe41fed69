// Exactness on every `npm test`: the default setup (flash attention on, auto speculation) on the first 6 of
// the 20 topics, batched (four, then two at a time), warm and resumed after a seal. The full matrix is test/slow/determinism.test.ts.

import {exactGreedy} from "./determinism-suite.ts";

exactGreedy("flash attention on (default), 6 topics", {}, false, 6);
