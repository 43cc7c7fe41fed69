// Compile once per distinct schema + options: a small LRU keyed by the canonical hash, so the same schema
// sent with its keys in another order is a hit too. Failed compiles are not kept (the error is cheap to
// produce again, and caching it would pin hostile input in memory).

import {compileWithKey, schemaKey, settings, type CompiledSchema, type CompileOptions} from "./compile.ts";

export class SchemaCache {
  private readonly entries = new Map<string, CompiledSchema>();
  private hitCount = 0;
  private missCount = 0;

  constructor(private readonly capacity = 64) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new TypeError(`SchemaCache size must be a positive integer, not ${capacity}`);
  }

  get(schema: unknown, opts?: CompileOptions): CompiledSchema {
    const s = settings(opts);
    const key = schemaKey(schema, s);
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.hitCount++;
      this.entries.delete(key); // move to the most recently used end
      this.entries.set(key, hit);
      return hit;
    }
    this.missCount++;
    const compiled = compileWithKey(schema, s, key);
    this.entries.set(key, compiled);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return compiled;
  }

  /** Entries held now. */
  get size(): number {
    return this.entries.size;
  }

  get hits(): number {
    return this.hitCount;
  }

  get misses(): number {
    return this.missCount;
  }
}
