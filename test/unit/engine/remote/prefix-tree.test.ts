// The per-replica prefix tree (engine/remote/prefix-tree.ts): longest-prefix lookups across edge splits, size
// accounting, least-recently-used eviction within the token bound, and a randomized check against a plain
// list of stored sequences.

import assert from "node:assert/strict";
import {describe, test} from "node:test";
import {PrefixTree} from "../../../../src/engine/remote/prefix-tree.ts";
import {seededRandom} from "../../../../src/engine/logit-sampler.ts";

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let k = 0;
  while (k < a.length && k < b.length && a[k] === b[k]) k++;
  return k;
}

describe("lookups", () => {
  test("an empty tree matches nothing", () => {
    const tree = new PrefixTree(100);
    assert.equal(tree.longestPrefix([1, 2, 3]), 0);
    assert.equal(tree.longestPrefix([]), 0);
    assert.equal(tree.size, 0);
  });

  test("exact, shorter, longer and diverging prompts against one stored sequence", () => {
    const tree = new PrefixTree(100);
    tree.insert([1, 2, 3, 4, 5]);
    assert.equal(tree.size, 5);
    assert.equal(tree.longestPrefix([1, 2, 3, 4, 5]), 5, "exact");
    assert.equal(tree.longestPrefix([1, 2]), 2, "a prefix");
    assert.equal(tree.longestPrefix([1, 2, 3, 4, 5, 6, 7]), 5, "a longer prompt");
    assert.equal(tree.longestPrefix([1, 2, 3, 9, 5]), 3, "diverging in the middle of the edge");
    assert.equal(tree.longestPrefix([9, 1, 2]), 0, "diverging at the first token");
    assert.equal(tree.longestPrefix([]), 0);
  });

  test("two branches sharing a prefix: a split counts every stored token once", () => {
    const tree = new PrefixTree(100);
    tree.insert([1, 2, 3, 4, 5]);
    tree.insert([1, 2, 3, 7, 8, 9]);
    assert.equal(tree.size, 8, "[1,2,3] + [4,5] + [7,8,9]");
    assert.equal(tree.longestPrefix([1, 2, 3, 4, 5]), 5);
    assert.equal(tree.longestPrefix([1, 2, 3, 7, 8, 9]), 6);
    assert.equal(tree.longestPrefix([1, 2, 3, 7, 0]), 4);
    assert.equal(tree.longestPrefix([1, 2, 3, 6]), 3, "diverging right at the split point");
    assert.equal(tree.longestPrefix([1, 2, 0]), 2, "diverging inside the shared edge");

    tree.insert([1, 2, 0, 0]);
    assert.equal(tree.size, 10, "splitting the shared edge again adds only the new tail");
    assert.equal(tree.longestPrefix([1, 2, 0, 0, 0]), 4);
    assert.equal(tree.longestPrefix([1, 2, 3, 4, 5]), 5);

    tree.insert([1, 2, 3]);
    tree.insert([1, 2, 3, 7, 8, 9]);
    assert.equal(tree.size, 10, "sequences already held add nothing");
    tree.insert([1, 2, 3, 4, 5, 6]);
    assert.equal(tree.size, 11, "extending a leaf adds the extension only");
    assert.equal(tree.longestPrefix([1, 2, 3, 4, 5, 6]), 6);
  });

  test("the caller's array is copied, not kept", () => {
    const tree = new PrefixTree(100);
    const tokens = [1, 2, 3];
    tree.insert(tokens);
    tokens[1] = 9;
    assert.equal(tree.longestPrefix([1, 2, 3]), 3);
  });
});

describe("eviction", () => {
  test("the least recently used branch goes first; the one just used stays", () => {
    const tree = new PrefixTree(10);
    tree.insert([1, 2, 3, 4, 5]);
    tree.insert([6, 7, 8, 9, 10]);
    assert.equal(tree.size, 10);
    assert.equal(tree.longestPrefix([1, 2, 3, 4, 5]), 5, "touches the first branch");
    tree.insert([11, 12, 13, 14, 15]);
    assert.equal(tree.size, 10);
    assert.equal(tree.longestPrefix([6, 7, 8, 9, 10]), 0, "the oldest branch is gone");
    assert.equal(tree.longestPrefix([1, 2, 3, 4, 5]), 5, "the recently used one stays");
    assert.equal(tree.longestPrefix([11, 12, 13, 14, 15]), 5, "the one just inserted stays");
  });

  test("a lookup without touch leaves the order as it was (routing peeks at every replica's tree)", () => {
    const tree = new PrefixTree(10);
    tree.insert([1, 2, 3, 4, 5]);
    tree.insert([6, 7, 8, 9, 10]);
    assert.equal(tree.longestPrefix([1, 2, 3, 4, 5], {touch: false}), 5);
    tree.insert([11, 12, 13, 14, 15]);
    assert.equal(tree.longestPrefix([1, 2, 3, 4, 5]), 0, "still the oldest: gone");
    assert.equal(tree.longestPrefix([6, 7, 8, 9, 10]), 5);
  });

  test("an oldest leaf longer than the excess is shortened, keeping its head", () => {
    const tree = new PrefixTree(10);
    tree.insert([1, 2, 3, 4, 5]);
    tree.insert([6, 7, 8, 9, 10]);
    tree.insert([11, 12]);
    assert.equal(tree.size, 10);
    assert.equal(tree.longestPrefix([1, 2, 3, 4, 5]), 3);
    assert.equal(tree.longestPrefix([6, 7, 8, 9, 10]), 5);
    assert.equal(tree.longestPrefix([11, 12]), 2);
  });

  test("removing a branch folds its sibling back into the shared edge", () => {
    const tree = new PrefixTree(8);
    tree.insert([1, 2, 3, 4, 5]);
    tree.insert([1, 2, 3, 6, 7]);
    assert.equal(tree.size, 7);
    tree.longestPrefix([1, 2, 3, 4, 5]);
    tree.insert([9, 9]);
    assert.equal(tree.size, 8);
    assert.equal(tree.longestPrefix([1, 2, 3, 6, 7]), 4, "the older branch lost its last token");
    // That lookup touched [6]; touch [4,5], then [9,9], so that [6] is the oldest leaf again.
    tree.longestPrefix([1, 2, 3, 4, 5]);
    tree.longestPrefix([9, 9]);
    tree.insert([8, 8, 8]);
    assert.equal(tree.size, 8);
    assert.equal(tree.longestPrefix([1, 2, 3, 6]), 3, "[6] removed");
    assert.equal(tree.longestPrefix([8, 8, 8]), 3, "just inserted");
    assert.equal(tree.longestPrefix([9, 9]), 2, "used after the [1,2,3,4,5] branch");
    assert.equal(tree.longestPrefix([1, 2, 3, 4, 5]), 3, "the merged edge [1,2,3,4,5] was oldest next and shortened");
  });

  test("a sequence longer than the bound is stored truncated", () => {
    const tree = new PrefixTree(4);
    tree.insert([1, 2, 3]);
    tree.insert([5, 6, 7, 8, 9, 10]);
    assert.equal(tree.size, 4);
    assert.equal(tree.longestPrefix([5, 6, 7, 8, 9, 10]), 4);
    assert.equal(tree.longestPrefix([1, 2, 3]), 0);
  });

  test("a coarse clock (ties everywhere) still keeps what was just inserted", () => {
    const tree = new PrefixTree(6, () => 0);
    tree.insert([1, 2, 3]);
    tree.insert([4, 5, 6]);
    tree.insert([7, 8, 9]);
    assert.equal(tree.size, 6);
    assert.equal(tree.longestPrefix([7, 8, 9]), 3);
    assert.equal(tree.longestPrefix([4, 5, 6]), 3);
    assert.equal(tree.longestPrefix([1, 2, 3]), 0);
  });

  test("the bound holds after every insert, and the sequence just inserted is always held in full", () => {
    const random = seededRandom(7);
    for (const bound of [1, 5, 17, 64]) {
      const tree = new PrefixTree(bound);
      const everInserted: number[][] = [];
      for (let op = 0; op < 400; op++) {
        const seq = Array.from({length: Math.floor(random() * 30)}, () => Math.floor(random() * 3));
        if (random() < 0.3) {
          const atMost = Math.max(0, ...everInserted.map((s) => commonPrefix(s.slice(0, bound), seq)));
          assert.ok(tree.longestPrefix(seq) <= atMost, "eviction never makes up tokens");
          continue;
        }
        tree.insert(seq);
        everInserted.push(seq);
        assert.ok(tree.size <= bound, `size ${tree.size} > bound ${bound}`);
        assert.equal(tree.longestPrefix(seq), Math.min(seq.length, bound));
      }
    }
  });

  test("rejects a bound below 1", () => {
    assert.throws(() => new PrefixTree(0), RangeError);
    assert.throws(() => new PrefixTree(1.5), RangeError);
  });
});

test("clear() removes everything, and the tree is usable afterwards", () => {
  const tree = new PrefixTree(100);
  tree.insert([1, 2, 3]);
  tree.insert([1, 4]);
  tree.clear();
  assert.equal(tree.size, 0);
  assert.equal(tree.longestPrefix([1, 2, 3]), 0);
  tree.insert([1, 2]);
  assert.equal(tree.size, 2);
  assert.equal(tree.longestPrefix([1, 2, 3]), 2);
});

test("randomized against a brute-force list of stored sequences (no eviction)", () => {
  for (const seed of [1, 2, 3]) {
    const random = seededRandom(seed);
    const tree = new PrefixTree(1_000_000);
    const stored: number[][] = [];
    const randomSeq = () => Array.from({length: Math.floor(random() * 12)}, () => Math.floor(random() * 3));
    for (let op = 0; op < 400; op++) {
      const seq = randomSeq();
      if (random() < 0.4) {
        tree.insert(seq);
        stored.push(seq);
        // Each distinct non-empty prefix of a stored sequence is one token in the tree.
        const prefixes = new Set(stored.flatMap((s) => s.map((_, i) => s.slice(0, i + 1).join(","))));
        assert.equal(tree.size, prefixes.size, `seed ${seed} op ${op}: size`);
      } else if (random() < 0.05) {
        tree.clear();
        stored.length = 0;
      } else {
        const expected = Math.max(0, ...stored.map((s) => commonPrefix(s, seq)));
        assert.equal(tree.longestPrefix(seq), expected, `seed ${seed} op ${op}: [${seq}]`);
      }
    }
  }
});
