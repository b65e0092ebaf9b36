/**
 * The embedded token channel (no server of its own): each API process listens on a loopback UDP
 * port and registers it as a file under DATA_DIR/live/; workers send every payload to each
 * registered port. Workers register theirs too, where the APIs send what they watch
 * (src/live/watch.ts). UDP because a datagram to a slow, stopped or vanished listener costs the sender
 * nothing (no connection, no back-pressure, no retry); the API and the worker share DATA_DIR on one
 * machine, which is what the embedded default is. A stale registration (its process is gone) is
 * skipped and removed.
 */
import dgram from 'node:dgram';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { PRIVATE_DIR, PRIVATE_FILE } from '../store/small-files';
import path from 'node:path';
import { BatchingPublisher, MAX_PAYLOAD_BYTES, unpackMessages, type LiveMessage, type LiveSubscriber } from './messages';
import { packWatch, unpackWatch, WATCH_REFRESH_MS } from './watch';

const HOST = '127.0.0.1';
/** How often a worker reads the registrations again; with none known, at most this often when asked. */
const RESCAN_MS = 500;
const RESCAN_EMPTY_MS = 100;
/** Datagrams the socket may hold unsent before new ones are dropped. */
const MAX_SEND_QUEUE = 2000;

export const registryDir = (dataDir: string): string => path.join(dataDir, 'live');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

type Role = 'api' | 'worker';

/** The ports of the APIs (or workers) registered under `dir` whose processes still run (the others' files are removed). */
export function registeredPorts(dir: string, role: Role = 'api'): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const ports: number[] = [];
  for (const name of names) {
    const match = /^(api|worker)-(\d+)-(\d+)\.port$/.exec(name);
    if (!match || match[1] !== role) continue;
    if (!alive(Number(match[2]))) {
      rmSync(path.join(dir, name), { force: true });
      continue;
    }
    ports.push(Number(match[3]));
  }
  return ports;
}

/** Registers a listening port as a file under `dir` until `unregister` (or the process's exit). */
function register(dir: string, role: Role, port: number): () => void {
  mkdirSync(dir, PRIVATE_DIR);
  const file = path.join(dir, `${role}-${process.pid}-${port}.port`);
  writeFileSync(file, `${port}\n`, PRIVATE_FILE);
  const unregister = () => {
    rmSync(file, { force: true });
    process.off('exit', unregister);
  };
  process.once('exit', unregister);
  return unregister;
}

export class UdpPublisher extends BatchingPublisher {
  private readonly socket = dgram.createSocket('udp4');
  private ports: number[] = [];
  private scanned = 0;
  private readonly timer: NodeJS.Timeout;
  private unregister = (): void => undefined;

  constructor(private readonly dir: string) {
    super();
    this.socket.on('error', () => undefined); // best effort: a refused datagram is a dropped one
    // The APIs' watch announcements come to this socket's port (sends before it is bound wait for it).
    this.socket.on('message', (buffer) => this.watching.heard(unpackWatch(buffer.toString('utf8'))));
    this.socket.bind(0, HOST, () => {
      if (this.closed) return;
      try {
        this.unregister = register(this.dir, 'worker', this.socket.address().port);
      } catch {
        // without a registration no API announces: the worker sends no tokens, and runs go on
      }
    });
    this.socket.unref();
    this.rescan();
    this.timer = setInterval(() => this.rescan(), RESCAN_MS);
    this.timer.unref();
  }

  wanted(): boolean {
    // An API that registered since the last scan is heard from its first call on, not a scan later.
    if (this.ports.length === 0 && Date.now() - this.scanned > RESCAN_EMPTY_MS) this.rescan();
    return this.ports.length > 0;
  }

  /** Reads the registrations now. */
  rescan(): void {
    this.ports = registeredPorts(this.dir);
    this.scanned = Date.now();
  }

  protected send(payload: string): void {
    if (this.socket.getSendQueueCount() > MAX_SEND_QUEUE) {
      this.dropped++;
      return;
    }
    for (const port of this.ports) {
      try {
        this.socket.send(payload, port, HOST, () => undefined);
      } catch {
        this.dropped++;
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    clearInterval(this.timer);
    this.unregister();
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
  }
}

/** An API's listener: binds a loopback port and registers it under `dir` until closed. */
export async function listenUdp(dir: string): Promise<LiveSubscriber & { port: number }> {
  const socket = dgram.createSocket('udp4');
  const listeners: ((messages: LiveMessage[]) => void)[] = [];
  socket.on('message', (buffer) => {
    const messages = unpackMessages(buffer.toString('utf8'));
    if (messages.length > 0) for (const listener of listeners) listener(messages);
  });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, HOST, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  try {
    socket.setRecvBufferSize(4 * 1024 * 1024); // bursts of 100 streaming runs; the kernel may cap it
  } catch {
    // keep the default
  }
  socket.unref();
  const port = socket.address().port;
  const unregister = register(dir, 'api', port);
  let closed = false;
  let workers: number[] = [];
  let scanned = 0;
  return {
    port,
    onMessages: (listener) => void listeners.push(listener),
    announce(keys) {
      if (closed) return;
      if (Date.now() - scanned >= WATCH_REFRESH_MS) {
        workers = registeredPorts(dir, 'worker');
        scanned = Date.now();
      }
      for (const payload of packWatch(keys, MAX_PAYLOAD_BYTES)) for (const to of workers) socket.send(payload, to, HOST, () => undefined);
    },
    async close() {
      if (closed) return;
      closed = true;
      unregister();
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    },
  };
}
