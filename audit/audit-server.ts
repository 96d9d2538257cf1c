// The audit desk's HTTP server: 127.0.0.1 only, GET and HEAD only, every page rendered from
// the read-only desk. Read-only by construction: there is no route that takes a body, the
// store connection is read-only, and nothing here imports the writer's client. A request
// naming another Host is refused (a page elsewhere must not reach the desk by DNS rebinding).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InternalError } from '../foundation/typed-error.js';
import { ProjectionRefusal } from '../projector/projection.js';
import type { ReplayMode } from '../writer/replay.js';
import { ReplayRefusal, VersionMismatchError } from '../writer/replay-errors.js';
import { StoreReadError } from '../writer/store-reader.js';
import { TIMELINE_PAGE_EVENTS, type AuditDesk } from './audit-desk.js';
import { chainPage, chainsPage, CHAIN_FILTERS, type ChainFilter } from './pages/chain-pages.js';
import { claimsPage } from './pages/claims-page.js';
import { eventPage, unreadableEventPage } from './pages/event-page.js';
import { hoursPage } from './pages/hours-page.js';
import { integrityPage } from './pages/integrity-page.js';
import { interventionsPage } from './pages/interventions-page.js';
import { PAGE_CSP, renderProblem, renderRefusal } from './pages/layout.js';
import { overviewPage } from './pages/overview-page.js';
import { recoveryPage } from './pages/recovery-page.js';
import { snapshotPage } from './pages/snapshot-page.js';
import { statePage } from './pages/state-page.js';
import { timelinePage } from './pages/timeline-page.js';

export const AUDIT_HOST = '127.0.0.1';
export const AUDIT_LIMITS = {
  maxUrlBytes: 4_096,
  maxTypeFilters: 64,
  requestTimeoutMs: 60_000,
  headersTimeoutMs: 10_000,
  maxConnections: 64,
} as const;

/** A request the desk understands but cannot answer as asked: 4xx with a reason. */
export class RequestProblem extends InternalError {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

function wholeNumber(params: URLSearchParams, name: string, min: number, max: number): number | null {
  const text = params.get(name);
  if (text === null || text === '') return null;
  if (!/^\d{1,15}$/.test(text)) throw new RequestProblem(400, `${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(text.slice(0, 40))}`);
  const value = Number(text);
  if (value < min || value > max) throw new RequestProblem(400, `${name} must be from ${min} to ${max}, got ${value}`);
  return value;
}

const REPLAY_MODES = ['strict', 'migrate', 'use-recorded'] as const satisfies readonly ReplayMode[];

function replayMode(params: URLSearchParams): ReplayMode {
  const mode = params.get('mode') ?? 'strict';
  if (!(REPLAY_MODES as readonly string[]).includes(mode)) throw new RequestProblem(400, `mode must be one of ${REPLAY_MODES.join(', ')}`);
  return mode as ReplayMode;
}

function pathSeq(desk: AuditDesk, text: string): number {
  if (!/^\d{1,15}$/.test(text)) throw new RequestProblem(400, `a seq is a whole number from 1 to ${desk.index.head_seq}, got ${JSON.stringify(text.slice(0, 40))}`);
  const seq = Number(text);
  if (seq < 1 || seq > desk.index.head_seq) throw new RequestProblem(404, `no event at seq ${seq}: the store holds seq 1 to ${desk.index.head_seq}`);
  return seq;
}

/** A page (with its own Content-Security-Policy when not the desk's), or a redirect to a desk path. */
export type Answer = { readonly status: number; readonly body: string; readonly type?: string; readonly csp?: string } | { readonly redirect: string };

function route(desk: AuditDesk, url: URL): Answer {
  const params = url.searchParams;
  const head = desk.index.head_seq;
  const page = (body: string): Answer => ({ status: 200, body });
  const parts = url.pathname.split('/').filter((p) => p !== '');
  switch (parts[0] ?? '') {
    case '':
      return page(overviewPage(desk));
    case 'timeline': {
      const types = params.getAll('type').filter((t) => t !== '');
      if (types.length > AUDIT_LIMITS.maxTypeFilters) throw new RequestProblem(400, `at most ${AUDIT_LIMITS.maxTypeFilters} type filters`);
      const limit = wholeNumber(params, 'limit', 1, TIMELINE_PAGE_EVENTS.max) ?? TIMELINE_PAGE_EVENTS.default;
      const from = wholeNumber(params, 'after_seq', 1, head);
      const after = wholeNumber(params, 'after', 0, head);
      const before = wholeNumber(params, 'before', 1, head + 1);
      if ([from, after, before].filter((p) => p !== null).length > 1) throw new RequestProblem(400, 'give one of after, before and after_seq: a page starts at one position');
      const position = from !== null ? { afterSeq: from - 1 } : before !== null ? { beforeSeq: before } : { afterSeq: after ?? 0 };
      return page(timelinePage(desk, { types: types.length === 0 ? null : types, position, limit }));
    }
    case 'hours':
      return page(hoursPage(desk));
    case 'event': {
      const seq = pathSeq(desk, parts[1] ?? '');
      const row = desk.rowAt(seq);
      if (row === null) throw new RequestProblem(404, `no row at seq ${seq}: the store has a gap there (seq ${seq} of 1 to ${head}); see Chain & signatures`);
      return page(row.event === null ? unreadableEventPage(desk, row) : eventPage(desk, row.event));
    }
    case 'event-id': {
      const seq = desk.seqOfEventId(parts[1] ?? '');
      if (seq === null) throw new RequestProblem(404, `no event with id ${JSON.stringify((parts[1] ?? '').slice(0, 80))} in this store`);
      return { redirect: `/event/${seq}` };
    }
    case 'state':
      return page(statePage(desk, wholeNumber(params, 'seq', 1, head) ?? head, replayMode(params)));
    case 'state.json': {
      const state = desk.stateAt(wholeNumber(params, 'seq', 1, head) ?? head, replayMode(params));
      return { status: 200, body: JSON.stringify({ seq: state.seq, mode: state.mode, state_hash: state.state_hash, from_snapshot_seq: state.from_snapshot_seq, events_replayed: state.events_replayed, snapshots_passed_over: state.snapshots_passed_over, state: state.state }, null, 2), type: 'application/json; charset=utf-8' };
    }
    case 'snapshots': {
      const seq = wholeNumber(params, 'seq', 1, head);
      if (seq !== null && params.get('compare') !== 'projection' && desk.snapshotAt(seq) === null) throw new RequestProblem(404, `no snapshot at seq ${seq}: see the list of snapshots`);
      return page(snapshotPage(desk, params.get('compare') === 'projection' ? { kind: 'projection' } : seq !== null ? { kind: 'snapshot', seq } : { kind: 'list' }));
    }
    case 'chains': {
      const only = params.get('only') ?? 'all';
      if (!(CHAIN_FILTERS as readonly string[]).includes(only)) throw new RequestProblem(400, `only must be one of ${CHAIN_FILTERS.join(', ')}`);
      return page(chainsPage(desk, only as ChainFilter, wholeNumber(params, 'after', 0, head) ?? 0));
    }
    case 'chain': {
      const chain = desk.index.chain_by_proposed_seq.get(pathSeq(desk, parts[1] ?? ''));
      if (!chain) throw new RequestProblem(404, `no action chain starts at seq ${parts[1]}: a chain is named by its ActionProposed`);
      return page(chainPage(desk, chain));
    }
    case 'claims':
      return page(claimsPage(desk, wholeNumber(params, 'after', 0, head) ?? 0));
    case 'recovery':
      return page(recoveryPage(desk));
    case 'interventions':
      return page(interventionsPage(desk));
    case 'integrity':
      return page(integrityPage(desk));
    default:
      throw new RequestProblem(404, `no page ${url.pathname}`);
  }
}

export function send(response: ServerResponse, method: string, status: number, body: string, type = 'text/html; charset=utf-8', csp = PAGE_CSP): void {
  response.writeHead(status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'content-security-policy': csp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  });
  response.end(method === 'HEAD' ? undefined : body);
}

export interface AuditServer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

export interface AuditServerOptions {
  readonly port: number;
  /** One line per failed request (the screen must show what went wrong). */
  readonly log: (line: string) => void;
}

/**
 * Refuses what no desk answers (another Host, a method other than GET and HEAD, an overlong URL)
 * with a page that names nothing about the run; null when the request may be routed.
 */
export function refusal(request: IncomingMessage, port: number): { readonly status: number; readonly body: string; readonly allow?: string } | null {
  const method = request.method ?? '';
  // The Host check comes first and refusals name nothing about the run: under DNS rebinding a
  // foreign page can read whatever a refusal says.
  const host = request.headers.host ?? '';
  if (host !== `${AUDIT_HOST}:${port}` && host !== `localhost:${port}`) return { status: 421, body: renderRefusal('Wrong host', `the desk answers requests for ${AUDIT_HOST}:${port} only`) };
  if (method !== 'GET' && method !== 'HEAD') return { status: 405, allow: 'GET, HEAD', body: renderRefusal('Read-only', `${method} refused: the audit desk is read-only and answers GET and HEAD only. A repair is an event appended through the writer: npm run repair.`) };
  if (Buffer.byteLength(request.url ?? '/') > AUDIT_LIMITS.maxUrlBytes) return { status: 414, body: renderRefusal('Request too long', `a desk URL is at most ${AUDIT_LIMITS.maxUrlBytes} bytes`) };
  return null;
}

/** The request target as a URL on the desk's origin, or a 400 saying why it is not one. */
export function requestUrl(rawUrl: string, port: number): URL {
  if (!rawUrl.startsWith('/')) throw new RequestProblem(400, 'a desk URL is a path starting with /');
  try {
    return new URL(rawUrl, `http://${AUDIT_HOST}:${port}`);
  } catch {
    throw new RequestProblem(400, 'not a URL the desk can read');
  }
}

/** The desk's answer to `url`: a page, a redirect, or a page saying why not (4xx for the request, 422 for the store, 500 for a bug). */
export function deskAnswer(desk: AuditDesk, url: URL, rawUrl: string, log: (line: string) => void): Answer {
  try {
    // One read-only connection for the whole request, closed before the answer is sent.
    return desk.within(() => route(desk, url));
  } catch (error) {
    return problemAnswer(desk, error, rawUrl, log);
  }
}

function problemAnswer(desk: AuditDesk, error: unknown, rawUrl: string, log: (line: string) => void): Answer {
  if (error instanceof RequestProblem) return { status: error.status, body: renderProblem(desk, `Cannot show ${rawUrl}`, error.message) };
  // A refused replay (other recorded versions) or a store that reads as corrupt is the store's answer, not the desk's failure.
  if (error instanceof StoreReadError && error.code === 'locked') {
    return { status: 503, body: renderProblem(desk, 'A writer holds the store', `${error.message}. The instance is running (resumed or repaired since the desk opened); the desk reads the store again once it stops.`) };
  }
  if (error instanceof ReplayRefusal || error instanceof StoreReadError || error instanceof ProjectionRefusal) {
    log(`audit: ${rawUrl}: ${error.message}`);
    const modes = error instanceof VersionMismatchError ? ' This store was recorded under other versions: replay it in a chosen mode with ?mode=migrate (upcast to this build) or ?mode=use-recorded (the recorded projector), as npm run replay does.' : '';
    return { status: 422, body: renderProblem(desk, `Cannot show ${rawUrl}`, `${error instanceof ProjectionRefusal ? `the events do not replay: ${error.message}` : error.message}${modes}`) };
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  log(`audit: ${rawUrl} failed: ${message}`);
  return { status: 500, body: renderProblem(desk, 'Desk error', `the desk failed on this page (a bug): ${message}`) };
}

/** Writes `answer` (a redirect carries the page CSP too). */
export function sendAnswer(response: ServerResponse, method: string, answer: Answer): void {
  if ('redirect' in answer) {
    response.writeHead(302, { location: answer.redirect, 'content-security-policy': PAGE_CSP });
    response.end();
    return;
  }
  send(response, method, answer.status, answer.body, answer.type, answer.csp);
}

export function handle(desk: AuditDesk, request: IncomingMessage, response: ServerResponse, port: number, log: (line: string) => void): void {
  const method = request.method ?? '';
  const refused = refusal(request, port);
  if (refused !== null) {
    if (refused.allow !== undefined) response.setHeader('allow', refused.allow);
    return send(response, refused.status === 405 ? 'GET' : method, refused.status, refused.body);
  }
  const rawUrl = request.url ?? '/';
  let url: URL;
  try {
    url = requestUrl(rawUrl, port);
  } catch (error) {
    return sendAnswer(response, method, problemAnswer(desk, error, rawUrl, log));
  }
  sendAnswer(response, method, deskAnswer(desk, url, rawUrl, log));
}

/** Listens on 127.0.0.1:`port` (0: any free port). */
export function startAuditServer(desk: AuditDesk, options: AuditServerOptions): Promise<AuditServer> {
  return listenOnLoopback((request, response, port) => handle(desk, request, response, port, options.log), options.port);
}

/** Serves `answer` on 127.0.0.1:`port` (0: any free port) under the desk's limits; `answer` is told the port listened on. */
export function listenOnLoopback(answer: (request: IncomingMessage, response: ServerResponse, port: number) => void, listenPort: number): Promise<AuditServer> {
  return new Promise((resolve, reject) => {
    let port = listenPort;
    const server: Server = createServer((request, response) => answer(request, response, port));
    server.requestTimeout = AUDIT_LIMITS.requestTimeoutMs;
    server.headersTimeout = AUDIT_LIMITS.headersTimeoutMs;
    server.maxConnections = AUDIT_LIMITS.maxConnections;
    server.once('error', reject);
    server.listen(listenPort, AUDIT_HOST, () => {
      port = (server.address() as AddressInfo).port;
      server.off('error', reject);
      resolve({
        url: `http://${AUDIT_HOST}:${port}/`,
        port,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
