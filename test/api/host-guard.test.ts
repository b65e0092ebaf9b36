/**
 * DNS rebinding (issue 32 §4): with THREADLINE_AUTH=none on loopback, a request whose `Host` names
 * another host is refused before any route; loopback names pass. Real HTTP on the express app.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { createApp } from '../../src/api/app';
import { hostNameOf } from '../../src/api/host-guard';
import type { Runs } from '../../src/temporal/runs';
import { listen, type Listening } from '../helpers/http';

let server: Listening;
let port = 0;

before(async () => {
  // No route here reaches the runs: a guard that lets a request through answers from /healthz.
  const runs = {} as unknown as Runs;
  server = await listen(
    createApp({ runs, config: { uiUrl: 'http://127.0.0.1:8233', TEMPORAL_NAMESPACE: 'default', HOST: '127.0.0.1' }, isHealthy: async () => true, logger: pino({ level: 'silent' }) }),
  );
  port = Number(new URL(server.url).port);
});
after(async () => {
  await server?.close();
});

function get(host: string, path = '/healthz'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

test('a forged Host is refused with 403 on every route; loopback names are served', async () => {
  for (const host of ['evil.example', `evil.example:${port}`, `attacker.test:80`, '10.0.0.5']) {
    assert.equal(await get(host), 403, host);
    assert.equal(await get(host, '/v1/runs'), 403, host);
  }
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'LOCALHOST']) assert.equal(await get(host), 200, host);
});

test('the host name of a Host header drops the port and keeps IPv6 brackets', () => {
  assert.equal(hostNameOf('Example.com:3000'), 'example.com');
  assert.equal(hostNameOf('[::1]:3000'), '[::1]');
  assert.equal(hostNameOf('127.0.0.1'), '127.0.0.1');
});
