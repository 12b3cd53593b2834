/** Fragments by non-negative 31-bit key, in open addressing; it starts over when full. */
export class FragmentTable {
  readonly #maxEntries: number;
  #keys = new Int32Array(64).fill(-1);
  #fragments: Uint8Array[] = new Array(64);
  #mask = 63;
  /** The hash's top bits pick the slot: 32 - log2(slots). */
  #shift = 26;
  #count = 0;

  /**
   * Creates an empty table.
   * @param maxEntries fragments held before it starts over
   */
  constructor(maxEntries: number) {
    this.#maxEntries = maxEntries;
  }

  /**
   * The fragment of a key.
   * @param key a non-negative 31-bit key
   * @returns its fragment, or none
   */
  get(key: number): Uint8Array | undefined {
    const keys = this.#keys;
    const mask = this.#mask;
    let slot = Math.imul(key, 0x9e3779b1) >>> this.#shift;
    for (;;) {
      const k = keys[slot]!;
      if (k === key) return this.#fragments[slot];
      if (k === -1) return undefined;
      slot = (slot + 1) & mask;
    }
  }

  /**
   * Keeps a key's fragment, first emptying the table when it is full.
   * @param key a non-negative 31-bit key the table does not hold
   * @param fragment its fragment
   */
  set(key: number, fragment: Uint8Array): void {
    if (this.#count >= this.#maxEntries) {
      this.#keys.fill(-1);
      this.#fragments = new Array(this.#keys.length);
      this.#count = 0;
    } else if ((this.#count + 1) * 2 > this.#keys.length) {
      this.#resize(this.#keys.length * 2);
    }
    this.#put(key, fragment);
    this.#count++;
  }

  #put(key: number, fragment: Uint8Array): void {
    const keys = this.#keys;
    const mask = this.#mask;
    let slot = Math.imul(key, 0x9e3779b1) >>> this.#shift;
    while (keys[slot] !== -1) slot = (slot + 1) & mask;
    keys[slot] = key;
    this.#fragments[slot] = fragment;
  }

  #resize(size: number): void {
    const keys = this.#keys;
    const fragments = this.#fragments;
    this.#keys = new Int32Array(size).fill(-1);
    this.#fragments = new Array(size);
    this.#mask = size - 1;
    this.#shift = 32 - Math.log2(size);
    for (let slot = 0; slot < keys.length; slot++) {
      if (keys[slot] !== -1) this.#put(keys[slot]!, fragments[slot]!);
    }
  }
}
