/**
 * Temporal Cloud's connection settings (TEMPORAL_API_KEY, TEMPORAL_TLS_CERT/KEY, TEMPORAL_TLS_CA), through
 * the real clients: the API's `Connection` and the worker's `NativeConnection` dial a local gRPC server over
 * TLS (a CA and its certificates made here with openssl) that records what reaches it — the client certificate (mTLS)
 * and the API key as a bearer token — and answers every call "unimplemented".
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { after, before, test } from 'node:test';
import { Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { connectionOptions } from '../../src/temporal/connection';

const dir = mkdtempSync(path.join(os.tmpdir(), 'threadline-tls-'));
const file = (name: string) => path.join(dir, name);
const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
/** A CA, and a certificate it signs for `cn` (end-entity, 127.0.0.1 and localhost as names): rustls, the worker's TLS, wants both roles apart. */
function issue(name: string, cn: string): void {
  openssl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${cn}`, '-keyout', file(`${name}.key`), '-out', file(`${name}.csr`));
  writeFileSync(file(`${name}.ext`), 'basicConstraints=critical,CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n');
  openssl('x509', '-req', '-in', file(`${name}.csr`), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '1', '-extfile', file(`${name}.ext`), '-out', file(`${name}.crt`));
}

let server: http2.Http2SecureServer;
let address = '';
const seen: { authorization: string | undefined; clientCn: unknown; path: string }[] = [];

before(async () => {
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=threadline-test-ca', '-keyout', file('ca.key'), '-out', file('ca.crt'));
  issue('server', 'threadline-test-server');
  issue('client', 'threadline-test-client');
  server = http2.createSecureServer({
    key: readFileSync(file('server.key')),
    cert: readFileSync(file('server.crt')),
    ca: [readFileSync(file('ca.crt'))],
    requestCert: true,
    rejectUnauthorized: false,
    allowHTTP1: false,
  });
  server.on('stream', (stream, headers) => {
    const peer = (stream.session?.socket as TLSSocket | undefined)?.getPeerCertificate();
    seen.push({
      authorization: typeof headers.authorization === 'string' ? headers.authorization : undefined,
      clientCn: peer && 'subject' in peer ? peer.subject?.CN : undefined,
      path: String(headers[':path']),
    });
    // A trailers-only gRPC answer: status 12, unimplemented.
    stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'not a Temporal server' }, { endStream: true });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const cloud = () => ({ temporalAddress: address, TEMPORAL_API_KEY: 'tk-secret', TEMPORAL_TLS_CERT: file('client.crt'), TEMPORAL_TLS_KEY: file('client.key'), TEMPORAL_TLS_CA: file('ca.crt') });

test('the API client and the worker reach the server over TLS with the client certificate and the API key', async () => {
  for (const [who, dial] of [
    ['client', () => Connection.connect({ ...connectionOptions(cloud()), connectTimeout: 5000 }).then((c) => c.close())],
    ['worker', () => NativeConnection.connect(connectionOptions(cloud())).then((c) => c.close())],
  ] as const) {
    seen.length = 0;
    // The server answers nothing useful; what counts is what reached it.
    await dial().catch(() => undefined);
    assert.ok(seen.length > 0, `${who}: no call reached the TLS server`);
    assert.ok(
      seen.every((s) => s.authorization === 'Bearer tk-secret' && s.clientCn === 'threadline-test-client'),
      `${who}: ${JSON.stringify(seen)}`,
    );
    assert.match(seen[0]?.path ?? '', /^\/temporal\.api\.workflowservice\.v1\.WorkflowService\//);
  }
});

test('the settings are checked: TLS only when asked, a certificate needs its key, files must be readable', () => {
  assert.deepEqual(connectionOptions({ temporalAddress: 'h:7233' }), { address: 'h:7233' });
  assert.deepEqual(connectionOptions({ temporalAddress: 'h:7233', TEMPORAL_TLS: 'true' }), { address: 'h:7233', tls: true });
  // An API key alone: TLS with the system's CAs (never a key in plaintext).
  assert.deepEqual(connectionOptions({ temporalAddress: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'k' }), { address: 'ns.acct.tmprl.cloud:7233', tls: true, apiKey: 'k' });
  assert.throws(() => connectionOptions({ temporalAddress: 'h:7233', TEMPORAL_TLS_CERT: file('client.crt') }), /TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together/);
  assert.throws(() => connectionOptions({ temporalAddress: 'h:7233', TEMPORAL_TLS_CA: file('nope.crt') }), /TEMPORAL_TLS_CA=.*nope\.crt cannot be read/);
  assert.throws(() => connectionOptions({ temporalAddress: 'h:7233', TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' }), /TEMPORAL_TLS=false/);
});
