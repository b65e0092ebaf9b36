/**
 * A private, in-memory Temporal dev server for the benchmark, on a free port,
 * with Threadline's search attributes registered. `stop()` is safe to call twice.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTE_NAMES } from '../src/workflows/definitions';

export const TEMPORAL_BIN = path.resolve(__dirname, '..', '.tools', 'bin', 'temporal');

export interface DevServer {
  address: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the frontend answers and the search attributes are registered. */
async function waitUntilReady(address: string, child: ChildProcess, stderr: () => string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`temporal dev server exited with code ${child.exitCode}:\n${stderr()}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
        if (SEARCH_ATTRIBUTE_NAMES.every((name) => customAttributes[name] !== undefined)) return;
      } finally {
        await connection.close();
      }
    } catch {
      // not accepting connections yet
    }
    if (Date.now() > deadline) throw new Error(`temporal dev server at ${address} not ready after ${timeoutMs} ms:\n${stderr()}`);
    await sleep(200);
  }
}

/**
 * Starts the server and waits until it is ready.
 * @param dynamicConfig server dynamic config as `KEY=VALUE` (value in JSON), e.g. `system.enableActivityEagerExecution=true`. @default []
 */
export async function startDevServer(dynamicConfig: readonly string[] = [], timeoutMs = 60_000): Promise<DevServer> {
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--headless', '--log-level', 'warn'];
  for (const pair of dynamicConfig) args.push('--dynamic-config-value', pair);
  for (const name of SEARCH_ATTRIBUTE_NAMES) args.push('--search-attribute', `${name}=Keyword`);
  const child = spawn(TEMPORAL_BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    err = (err + chunk.toString()).slice(-4000);
  });
  // If this process dies abruptly, take the server with it.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.removeListener('exit', killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };

  try {
    await waitUntilReady(address, child, () => err, timeoutMs);
  } catch (e) {
    await stop();
    throw e;
  }
  return { address, stop };
}
