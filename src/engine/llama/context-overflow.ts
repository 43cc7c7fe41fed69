// Context overflow is never handled by shifting tokens out (the library's default): the pipeline fits the
// budget before decoding starts, and this strategy makes any overflow that slips past that an error.

export class ContextOverflowError extends Error {
  constructor() {
    super("the region is full: no position left for another token");
  }
}

export const neverShift = {
  strategy: (): never => {
    throw new ContextOverflowError();
  },
};
