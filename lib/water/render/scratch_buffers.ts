/**
 * Buffers that the slices of big pages are rendered into when the page is
 * compressed as it renders, used again from slice to slice and page to
 * page: a slice is read only until it is compressed, and a new megabyte of
 * memory for each one costs page faults and garbage collections that cost
 * more than rendering it (about 30 ms for the ten slices of a 10 MB page on
 * a virtual machine whose pages are mapped on first touch).
 */
export class ScratchBuffers {
  readonly #size: number;
  readonly #keep: number;
  readonly #idle: Uint8Array[] = [];
  readonly #mine = new WeakSet<ArrayBufferLike>();

  /**
   * @param size bytes of each buffer
   * @param keep buffers kept idle at most (the rest are left to the garbage collector)
   */
  constructor(size: number, keep: number) {
    this.#size = size;
    this.#keep = keep;
  }

  /** Bytes of each buffer. */
  get size(): number {
    return this.#size;
  }

  /** Buffers idle now. */
  get idle(): number {
    return this.#idle.length;
  }

  /**
   * An idle buffer, or a new one.
   * @returns a buffer of {@linkcode size} bytes, whose contents are whatever was written last
   */
  take(): Uint8Array {
    const buffer = this.#idle.pop();
    if (buffer !== undefined) return buffer;
    const made = new Uint8Array(this.#size);
    this.#mine.add(made.buffer);
    return made;
  }

  /**
   * Gives back the buffer a view was written in, once nothing reads the
   * view any more; a view of memory not taken from here is ignored.
   * @param view a view of a buffer from {@linkcode take}, or of anything else
   */
  give(view: Uint8Array): void {
    if (!this.#mine.has(view.buffer) || this.#idle.length >= this.#keep) return;
    // Given back twice, a buffer would be handed out twice.
    if (!this.#idle.some((idle) => idle.buffer === view.buffer)) {
      this.#idle.push(new Uint8Array(view.buffer));
    }
  }
}
