/**
 * The token channel of a deployment on PostgreSQL (MEMORY_STORE=postgres): NOTIFY from workers,
 * LISTEN in each API, on the database the deployment already has — no broker to run, and every
 * API on every host hears every worker. Payloads are batches of at most 8000 bytes (NOTIFY's
 * limit). A worker keeps one connection and one statement in flight (the payloads that gather
 * meanwhile go out together in the next): when the database is slow or away, what does not fit
 * is dropped, never waited for.
 */
import { Client } from 'pg';
import { BatchingPublisher, MAX_PAYLOAD_BYTES, unpackMessages, type LiveMessage, type LiveSubscriber } from './messages';
import { packWatch, unpackWatch } from './watch';

export const CHANNEL = 'threadline_live';
/** Where the APIs tell the workers what they watch (src/live/watch.ts). */
export const WATCH_CHANNEL = 'threadline_live_watch';
/** Payloads waiting for the connection before new ones are dropped, and sent in one statement. */
const MAX_PENDING = 200;
const PER_STATEMENT = 20;
const RECONNECT_MS = 1000;

/** One statement that NOTIFYs each payload on `channel`, in order. */
function notifyAll(client: Client, channel: string, payloads: readonly string[]): Promise<unknown> {
  const calls = payloads.map((_p, i) => `pg_notify($1, $${i + 2})`).join(', ');
  return client.query(`SELECT ${calls}`, [channel, ...payloads]);
}

/** One connection that reconnects (after RECONNECT_MS) when it fails; `ready` is null while down. */
class Connection {
  ready: Client | null = null;
  private closed = false;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly url: string,
    private readonly onReady: (client: Client) => Promise<void> = async () => undefined,
  ) {
    this.connect();
  }

  private connect(): void {
    if (this.closed) return;
    const client = new Client({ connectionString: this.url, connectionTimeoutMillis: 5000 });
    const retry = () => {
      if (this.ready === client) this.ready = null;
      client.removeAllListeners('error');
      client.on('error', () => undefined);
      void client.end().catch(() => undefined);
      if (!this.closed && !this.timer) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.connect();
        }, RECONNECT_MS);
        this.timer.unref();
      }
    };
    client.on('error', retry);
    client.on('end', retry);
    client
      .connect()
      .then(() => {
        // Best effort to the end: this connection never keeps a process alive.
        (client as unknown as { connection?: { stream?: { unref?: () => void } } }).connection?.stream?.unref?.();
        return this.onReady(client);
      })
      .then(() => {
        if (this.closed) return void client.end().catch(() => undefined);
        this.ready = client;
      }, retry);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const client = this.ready;
    this.ready = null;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}

export class PgPublisher extends BatchingPublisher {
  private readonly connection: Connection;
  private pending: string[] = [];
  private sending = false;

  constructor(url: string) {
    super();
    // A NOTIFY commits a transaction: without this, each statement would wait for a WAL flush to
    // disk. Tokens are best effort; nothing is lost that the run's state does not keep.
    this.connection = new Connection(url, async (client) => {
      await client.query('SET synchronous_commit = off');
      client.on('notification', (n) => {
        if (n.channel === WATCH_CHANNEL && n.payload) this.watching.heard(unpackWatch(n.payload));
      });
      await client.query(`LISTEN ${WATCH_CHANNEL}`);
    });
  }

  wanted(): boolean {
    return this.connection.ready !== null;
  }

  protected send(payload: string): void {
    if (!this.connection.ready || this.pending.length >= MAX_PENDING) {
      this.dropped++;
      return;
    }
    this.pending.push(payload);
    this.next();
  }

  /** One statement at a time on the connection: the payloads waiting go out together, one pg_notify each. */
  private next(): void {
    const client = this.connection.ready;
    if (this.sending || this.pending.length === 0) return;
    if (!client) {
      this.dropped += this.pending.length;
      this.pending = [];
      return;
    }
    const batch = this.pending.splice(0, PER_STATEMENT);
    this.sending = true;
    notifyAll(client, CHANNEL, batch).then(
      () => {
        this.sending = false;
        this.next();
      },
      () => {
        this.sending = false;
        this.dropped += batch.length;
        this.next();
      },
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    await this.connection.close();
  }
}

/** An API's listener: LISTEN on the channel (again after a reconnect). */
export function listenPg(url: string): LiveSubscriber {
  const listeners: ((messages: LiveMessage[]) => void)[] = [];
  const connection = new Connection(url, async (client) => {
    client.on('notification', (n) => {
      if (n.channel !== CHANNEL || !n.payload) return;
      const messages = unpackMessages(n.payload);
      if (messages.length > 0) for (const listener of listeners) listener(messages);
    });
    await client.query(`LISTEN ${CHANNEL}`);
  });
  /** Keys to announce once the statement in flight is done: one at a time on the connection. */
  let waiting: Set<string> | null = null;
  let sending = false;
  const next = (): void => {
    const client = connection.ready;
    if (sending || !waiting) return;
    const payloads = client ? packWatch([...waiting], MAX_PAYLOAD_BYTES) : [];
    waiting = null;
    if (!client || payloads.length === 0) return;
    sending = true;
    notifyAll(client, WATCH_CHANNEL, payloads)
      .catch(() => undefined)
      .finally(() => {
        sending = false;
        next();
      });
  };
  return {
    onMessages: (listener) => void listeners.push(listener),
    announce(keys) {
      waiting ??= new Set();
      for (const key of keys) waiting.add(key);
      next();
    },
    close: () => connection.close(),
  };
}
