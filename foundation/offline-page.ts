// The head of a page written as one file a reader opens offline (a reviewer's scorecard, a study's
// report): no headers reach a file, so its Content-Security-Policy is a <meta> element, and the
// page names its one inline style. The same lines for every such page, so a policy or a charset
// is never set in one and forgotten in the other.
import { escapeHtml } from './html-escape.js';

export interface OfflinePageHead {
  /** The page's whole Content-Security-Policy (what it may load and run: nothing beyond its own inline parts). */
  readonly csp: string;
  /** The title as text (escaped here). */
  readonly title: string;
  /** The inline style sheet, as it stands between <style> and </style> (it must not contain `</`). */
  readonly style: string;
  /** Further <meta> elements, after the policy (e.g. no referrer). */
  readonly meta?: readonly string[];
}

/** The page's lines from the doctype to the opening <body>, for the caller to join with newlines. */
export function offlinePageHead(head: OfflinePageHead): string[] {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${head.csp}">`,
    ...(head.meta ?? []),
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(head.title)}</title>`,
    `<style>${head.style}</style>`,
    '</head>',
    '<body>',
  ];
}
