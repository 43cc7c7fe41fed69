// What one remote replica probably still holds in its prompt cache: the token-id sequences the front end
// recently sent it, as a compressed radix tree, so a new prompt goes to the replica with the longest shared
// prefix. It is a guess kept within a token budget: least-recently-used leaves are cut back first, since
// the replica's own cache evicts old conversations first too, and a shared stem outlives its branches.

interface Node {
  /** Token ids on the edge into this node; empty only for the root. Always a private copy. */
  edge: number[];
  /** Keyed by the first token of the child's edge: siblings never share one, or they would be one edge. */
  children: Map<number, Node>;
  parent: Node | null;
  /** now() at the last touch. */
  lastUsed: number;
  /** Operation counter at the last touch: breaks lastUsed ties (a coarse clock such as Date.now()), so the
   * path just inserted always counts as newer than everything else and is never the one evicted. */
  tick: number;
}

function olderThan(a: Node, b: Node): boolean {
  return a.lastUsed < b.lastUsed || (a.lastUsed === b.lastUsed && a.tick < b.tick);
}

/** How many tokens of `edge` match `tokens` from `from` on. */
function matchLength(edge: readonly number[], tokens: readonly number[], from: number): number {
  const n = Math.min(edge.length, tokens.length - from);
  let k = 0;
  while (k < n && edge[k] === tokens[from + k]) k++;
  return k;
}

export class PrefixTree {
  private root: Node = {edge: [], children: new Map(), parent: null, lastUsed: 0, tick: 0};
  private stored = 0;
  private ticks = 0;
  private readonly maxTokens: number;
  private readonly now: () => number;

  /** maxTokens: bound on the total number of token ids stored in the tree's edges (>= 1). `now` must not go
   * backwards; the default is a counter rather than wall time so that eviction order is deterministic. */
  constructor(maxTokens: number, now?: () => number) {
    if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new RangeError(`maxTokens must be an integer >= 1, got ${maxTokens}`);
    this.maxTokens = maxTokens;
    let counter = 0;
    this.now = now ?? (() => ++counter);
  }

  /** Records that the replica now holds `tokens` (a served prompt plus its reply). Marks the path as recently
   * used. After inserting, evicts least-recently-used leaves (shortening or removing them) until
   * size <= maxTokens. A sequence longer than maxTokens is stored truncated to its first maxTokens tokens. */
  insert(tokens: readonly number[]): void {
    const seq = tokens.length > this.maxTokens ? tokens.slice(0, this.maxTokens) : tokens;
    const stamp = this.stamp();
    let node = this.root;
    let i = 0;
    while (i < seq.length) {
      const child = node.children.get(seq[i]!);
      if (child === undefined) {
        const leaf: Node = {edge: seq.slice(i), children: new Map(), parent: node, lastUsed: stamp.lastUsed, tick: stamp.tick};
        node.children.set(seq[i]!, leaf);
        this.stored += leaf.edge.length;
        break;
      }
      const k = matchLength(child.edge, seq, i);
      // A sequence ending inside an edge needs no split: the tree stores prefixes, not where sequences end.
      const next = k < child.edge.length && i + k < seq.length ? this.split(child, k) : child;
      this.touch(next, stamp);
      i += k;
      node = next;
    }
    this.evict();
  }

  /**
   * Length of the longest prefix of `tokens` stored in the tree (0 when none); marks the matched path as used unless
   * `touch` is false (routing looks a prompt up in every replica's tree, and only the chosen one serves it).
   */
  longestPrefix(tokens: readonly number[], {touch = true}: {touch?: boolean} = {}): number {
    const stamp = touch ? this.stamp() : null;
    let node = this.root;
    let i = 0;
    while (i < tokens.length) {
      const child = node.children.get(tokens[i]!);
      if (child === undefined) break;
      const k = matchLength(child.edge, tokens, i);
      if (stamp) this.touch(child, stamp);
      i += k;
      if (k < child.edge.length) break;
      node = child;
    }
    return i;
  }

  /** Total token ids stored (sum of edge lengths). */
  get size(): number {
    return this.stored;
  }

  /** Removes everything (a replica that died). */
  clear(): void {
    this.root.children = new Map();
    this.stored = 0;
  }

  private stamp(): {lastUsed: number; tick: number} {
    return {lastUsed: this.now(), tick: ++this.ticks};
  }

  private touch(node: Node, stamp: {lastUsed: number; tick: number}): void {
    node.lastUsed = stamp.lastUsed;
    node.tick = stamp.tick;
  }

  /** Cuts `node`'s edge after `k` tokens (0 < k < edge length); returns the new upper node. `node` keeps its
   * identity (and stamp) as the lower part, so nothing below it needs re-parenting. */
  private split(node: Node, k: number): Node {
    const parent = node.parent!;
    const upper: Node = {edge: node.edge.slice(0, k), children: new Map(), parent, lastUsed: node.lastUsed, tick: node.tick};
    parent.children.set(upper.edge[0]!, upper);
    node.edge = node.edge.slice(k);
    node.parent = upper;
    upper.children.set(node.edge[0]!, node);
    return upper;
  }

  private evict(): void {
    while (this.stored > this.maxTokens) {
      const leaf = this.oldestLeaf();
      if (leaf === undefined) return; // unreachable: an empty tree stores nothing
      const excess = this.stored - this.maxTokens;
      if (leaf.edge.length > excess) {
        // Shorten rather than drop: the head of the edge is a prefix the replica most likely still holds.
        leaf.edge.length -= excess;
        this.stored -= excess;
      } else {
        this.removeLeaf(leaf);
      }
    }
  }

  /** A full scan per evicted leaf: the tree has one node per branch point, not per token, so a few thousand
   * nodes at most for a budget of ~1e6 tokens, and an insert rarely evicts more than a few leaves. Iterative,
   * since a long chain of branch points must not overflow the stack. */
  private oldestLeaf(): Node | undefined {
    let oldest: Node | undefined;
    const stack: Node[] = [...this.root.children.values()];
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (node.children.size === 0) {
        if (oldest === undefined || olderThan(node, oldest)) oldest = node;
      } else {
        for (const child of node.children.values()) stack.push(child);
      }
    }
    return oldest;
  }

  private removeLeaf(leaf: Node): void {
    const parent = leaf.parent!;
    parent.children.delete(leaf.edge[0]!);
    this.stored -= leaf.edge.length;
    if (parent === this.root || parent.children.size !== 1) return;
    // A non-root node with one child is a split nobody needs any more: fold it into the child (the child
    // survives, so a node being evicted or inserted into never vanishes under its caller).
    const only = parent.children.values().next().value as Node;
    const grand = parent.parent!;
    only.edge = parent.edge.concat(only.edge);
    only.parent = grand;
    if (olderThan(only, parent)) this.touch(only, parent);
    grand.children.set(only.edge[0]!, only);
  }
}
