// What the explorer's two drawings share, the map and the time series: SVG
// elements made from attributes, and a drawing's size from its width on the page.

const SVG = "http://www.w3.org/2000/svg";

/** A drawing on the page: its SVG, and the description that says in words what it shows. */
export interface Drawing {
  readonly svg: SVGSVGElement;
  readonly description: SVGDescElement;
}

/** How a drawing is sized: its height a share of its width, within bounds; the width before the page is laid out. */
export interface DrawingShape {
  readonly aspect: number;
  readonly minHeight: number;
  readonly maxHeight: number;
  readonly fallbackWidth: number;
}

/**
 * An SVG element with attributes and, optionally, text.
 * @param name the tag, e.g. `circle`
 * @param attributes attribute values
 * @param text its text content
 */
export function svg<K extends keyof SVGElementTagNameMap>(
  name: K,
  attributes: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, name);
  for (const [attribute, value] of Object.entries(attributes)) {
    element.setAttribute(attribute, String(value));
  }
  if (text !== undefined) element.textContent = text;
  return element;
}

/**
 * The size a drawing is drawn at: its width on the page now (in CSS pixels,
 * so that 12px text is 12 px), and a height for it.
 * @param element the drawing
 * @param shape how its height follows its width
 */
export function drawingSize(
  element: SVGSVGElement,
  shape: DrawingShape,
): { width: number; height: number } {
  const measured = Math.round(element.getBoundingClientRect().width);
  const width = measured > 0 ? measured : shape.fallbackWidth;
  return {
    width,
    height: Math.round(Math.min(shape.maxHeight, Math.max(shape.minHeight, width * shape.aspect))),
  };
}
