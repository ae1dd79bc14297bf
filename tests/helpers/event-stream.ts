import http from 'node:http';

// A GET /events client for tests: reads text/event-stream over a real HTTP connection and parses
// it as a browser's EventSource would (id, event, one data line per event; comment lines apart).

/** One event as received. */
export interface ReceivedEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

/** An open GET /events and what it has received so far. */
export interface EventStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: ReceivedEvent[];
  /** Every byte of the body so far, as text. */
  text(): string;
  /** Comment lines (": ping") received. */
  comments: string[];
  /** Resolves when the server ends the stream (or it is closed); never rejects. */
  ended: Promise<void>;
  /** Resolves once `predicate` holds of the events, or rejects after `timeoutMs`. */
  waitFor(predicate: (events: readonly ReceivedEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  /** Stops reading the stream (the socket's buffers fill and the server backs up), and starts again. */
  pause(): void;
  resume(): void;
  close(): void;
}

/** Opens GET /events on 127.0.0.1:`port`, with a Last-Event-ID header or `?lastEventId=` query when given. */
export function openEventStream(
  port: number,
  options: { lastEventId?: number; queryLastEventId?: number } = {},
): Promise<EventStream> {
  const query = options.queryLastEventId === undefined ? '' : `?lastEventId=${options.queryLastEventId}`;
  const headers: Record<string, string> =
    options.lastEventId === undefined ? {} : { 'last-event-id': String(options.lastEventId) };
  return new Promise((resolve, reject) => {
    const request = http.get(
      { host: '127.0.0.1', port, path: `/events${query}`, headers, agent: false },
      (response) => {
        let body = '';
        let parsedUpTo = 0;
        const events: ReceivedEvent[] = [];
        const comments: string[] = [];
        const waiters = new Set<() => void>();
        let endResolve!: () => void;
        const ended = new Promise<void>((done) => {
          endResolve = done;
        });
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          body += chunk;
          let blockEnd = body.indexOf('\n\n', parsedUpTo);
          while (blockEnd >= 0) {
            const block = body.slice(parsedUpTo, blockEnd);
            parsedUpTo = blockEnd + 2;
            const fields = new Map<string, string>();
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) comments.push(line);
              else {
                const colon = line.indexOf(': ');
                fields.set(line.slice(0, colon), line.slice(colon + 2));
              }
            }
            if (fields.has('data'))
              events.push({
                id: Number(fields.get('id')),
                event: fields.get('event') ?? 'message',
                data: JSON.parse(fields.get('data')!) as Record<string, unknown>,
              });
            blockEnd = body.indexOf('\n\n', parsedUpTo);
          }
          for (const waiter of waiters) waiter();
        });
        const finish = (): void => {
          endResolve();
          for (const waiter of waiters) waiter();
        };
        response.on('end', finish);
        response.on('close', finish);
        response.on('error', finish);
        let closed = false;
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          events,
          comments,
          text: () => body,
          ended,
          waitFor(predicate, timeoutMs = 20_000) {
            return new Promise((done, fail) => {
              if (predicate(events)) {
                done();
                return;
              }
              const check = (): void => {
                if (!predicate(events)) return;
                clearTimeout(timer);
                waiters.delete(check);
                done();
              };
              const timer = setTimeout(() => {
                waiters.delete(check);
                fail(new Error(`no such events within ${timeoutMs} ms; got ${events.map((e) => e.event).join(' ')}`));
              }, timeoutMs);
              waiters.add(check);
            });
          },
          pause: () => response.pause(),
          resume: () => response.resume(),
          close() {
            if (closed) return;
            closed = true;
            request.destroy();
          },
        });
      },
    );
    request.on('error', reject);
  });
}
