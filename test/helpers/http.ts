/** Real HTTP for the API tests: an express app on a free loopback port, and JSON calls to it. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

export interface Listening {
  url: string;
  /** Closes the listener, cutting any open connections (event streams included). */
  close: () => Promise<void>;
}

/** Serves `app` on 127.0.0.1, on a port the OS picks. */
export async function listen(app: Express): Promise<Listening> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Reply<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

/** One request to `${url}${path}`; a body is sent as JSON, and a non-empty reply is parsed as JSON. */
export async function requestJson<T = Record<string, unknown>>(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply<T>> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as T };
}
