// Runs async tasks one at a time, in call order; a failed task does not stop the ones after it.
// Used where several awaits must see one consistent state (the region pool's preparations, the disk tier).

export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => undefined);
    return next;
  }
}
