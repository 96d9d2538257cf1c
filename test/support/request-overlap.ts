// What a loopback server sees of one client's requests over time (issue 31 item 8: the adapter
// never keeps more than one request of an instance outstanding). Attached to a real node:http
// server, it records for every request when it arrived, when its response closed (the server
// finished it, or learnt that the client left) and when its connection closed, and keeps two live
// counts with their maxima:
//   - requests open: from a request's arrival to its response's close — what the server holds;
//   - connections open: from a connection's first request to the connection's close — stricter,
//     what the adapter promises (the last request's connection closed before the next arrives).
// The counts are kept by the server's own events, as they happen, not computed afterwards from
// timestamps, so two requests that overlap by a microsecond still count as two.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface ObservedRequest {
  readonly method: string;
  readonly url: string;
  /** performance.now() when its headers had arrived. */
  readonly arrivedAt: number;
  /** When its response closed (finished, or the client left first); null while open. */
  responseClosedAt: number | null;
  /** When its connection closed; null while open. */
  connectionClosedAt: number | null;
  /** Requests open at its arrival, itself included. */
  readonly requestsOpenAtArrival: number;
}

export interface OverlapObserver {
  readonly requests: ObservedRequest[];
  /** The most requests the server held at once. */
  maxRequestsOpen(): number;
  /** The most connections that had carried a request and were not yet closed, at once. */
  maxConnectionsOpen(): number;
  /** Every request whose connection was still open when the next request arrived, in words. */
  connectionOverlaps(): string[];
}

/** Starts observing `server` (before any request arrives). */
export function observeOverlap(server: Server): OverlapObserver {
  const requests: ObservedRequest[] = [];
  const used = new WeakSet<Socket>();
  let requestsOpen = 0;
  let maxRequests = 0;
  let connectionsOpen = 0;
  let maxConnections = 0;
  // Before the server's own handler: counted the moment it arrives, whatever the handler does.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    requestsOpen += 1;
    maxRequests = Math.max(maxRequests, requestsOpen);
    const entry: ObservedRequest = { method: req.method ?? '', url: req.url ?? '', arrivedAt: performance.now(), responseClosedAt: null, connectionClosedAt: null, requestsOpenAtArrival: requestsOpen };
    requests.push(entry);
    res.once('close', () => {
      requestsOpen -= 1;
      entry.responseClosedAt = performance.now();
    });
    const socket = req.socket;
    if (!used.has(socket)) {
      used.add(socket);
      connectionsOpen += 1;
      maxConnections = Math.max(maxConnections, connectionsOpen);
      socket.once('close', () => (connectionsOpen -= 1));
    }
    socket.once('close', () => (entry.connectionClosedAt = performance.now()));
  });
  return {
    requests,
    maxRequestsOpen: () => maxRequests,
    maxConnectionsOpen: () => maxConnections,
    connectionOverlaps: () => {
      const out: string[] = [];
      for (let i = 0; i + 1 < requests.length; i += 1) {
        const a = requests[i]!;
        const b = requests[i + 1]!;
        if (a.connectionClosedAt === null || a.connectionClosedAt > b.arrivedAt) out.push(`${a.method} ${a.url} (arrived ${a.arrivedAt.toFixed(1)} ms, connection closed ${a.connectionClosedAt?.toFixed(1) ?? 'never'}) still open when ${b.method} ${b.url} arrived at ${b.arrivedAt.toFixed(1)} ms`);
      }
      return out;
    },
  };
}
