// How one mark of the 72-hour picture is drawn: its shape at (x, y) in its style's colour, and
// its letter beside it. Every shape has a black outline, so shapes stay apart in print.
import { escapeHtml } from '../foundation/html-escape.js';
import type { MarkStyle } from './timeline-lanes.js';

export const px = (value: number): string => (Math.round(value * 10) / 10).toString();

/** The shape of `style`, `size` pixels across, centred on (x, y). */
export function shapeSvg(style: MarkStyle, x: number, y: number, size: number): string {
  const h = size / 2;
  const paint = `fill="${style.colour}" stroke="#000" stroke-width="0.8"`;
  switch (style.shape) {
    case 'square':
      return `<rect x="${px(x - h)}" y="${px(y - h)}" width="${px(size)}" height="${px(size)}" ${paint}/>`;
    case 'hollow':
      return `<rect x="${px(x - h)}" y="${px(y - h)}" width="${px(size)}" height="${px(size)}" fill="#fff" stroke="${style.colour}" stroke-width="2"/>`;
    case 'cross':
      return `<path d="M${px(x - h)} ${px(y - h)}L${px(x + h)} ${px(y + h)}M${px(x - h)} ${px(y + h)}L${px(x + h)} ${px(y - h)}" stroke="${style.colour}" stroke-width="2.5" fill="none"/><rect x="${px(x - h)}" y="${px(y - h)}" width="${px(size)}" height="${px(size)}" fill="transparent"/>`;
    case 'bar':
      return `<rect x="${px(x - size / 6)}" y="${px(y - h)}" width="${px(size / 3)}" height="${px(size)}" ${paint}/>`;
    case 'diamond':
      return `<path d="M${px(x)} ${px(y - h)}L${px(x + h)} ${px(y)}L${px(x)} ${px(y + h)}L${px(x - h)} ${px(y)}Z" ${paint}/>`;
    case 'triangle':
      return `<path d="M${px(x - h)} ${px(y - h)}L${px(x + h)} ${px(y)}L${px(x - h)} ${px(y + h)}Z" ${paint}/>`;
    case 'circle':
      return `<circle cx="${px(x)}" cy="${px(y)}" r="${px(h)}" ${paint}/>`;
  }
}

/** The style's letter just above and right of the mark ('' when the shape says it all). */
export function letterSvg(style: MarkStyle, x: number, y: number, size: number): string {
  if (style.letter === '') return '';
  return `<text x="${px(x + size / 2 + 1)}" y="${px(y - size / 2 + 2)}" font-size="${px(Math.max(7, size * 0.9))}" font-weight="bold">${escapeHtml(style.letter)}</text>`;
}
