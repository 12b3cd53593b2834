// Building the playground's DOM from text: elements made with createElement,
// their text set as text, never as markup (the page's Trusted Types policy
// allows none).

/**
 * Builds an element with attributes and children (text or elements).
 * @param tag the tag name
 * @param attributes attribute values; `false` leaves one out, `true` sets it empty
 * @param children text or nodes
 * @returns the element
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Readonly<Record<string, string | boolean>> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false) continue;
    node.setAttribute(name, value === true ? "" : value);
  }
  node.append(...children);
  return node;
}

/**
 * The page's element of an id.
 * @param id the id
 * @returns the element
 * @throws {Error} when the page has none
 */
export function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`The page has no #${id}`);
  return found as T;
}

/** A revision id shortened for the eye: its first 8 characters. */
export function short(id: string): string {
  return id.length > 8 ? `${id.slice(0, 8)}…` : id;
}

/** The time of day, `HH:MM:SS`, for a log line. */
export function clock(): string {
  return new Date().toTimeString().slice(0, 8);
}
