/**
 * A run that waits for a person across the upgrade to named encryption keys: its history so far
 * was sealed the way the release before did (a passphrase stretched with HKDF, each payload
 * labelled with a hash of the key); a worker and client of this release, given the same
 * THREADLINE_ENCRYPTION_KEY, replay that history, take the reply and finish the run, and seal
 * what they add under the key's name. Real server, real workers, the stub model server.
 */
import assert from 'node:assert/strict';
import { createCipheriv, randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Client, Connection } from '@temporalio/client';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, type Worker } from '@temporalio/worker';
import type { ExecutionState } from '../../src/planning/execution-state';
import { EncryptionCodec, parseKey } from '../../src/temporal/codec/encryption';
import { Runs } from '../../src/temporal/runs';
import { createWorker } from '../../src/worker';
import { askThenAnswer } from '../helpers/scenarios';
import { StubModelServer } from '../helpers/stub-model-server';
import { installTestRuntime, startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const KEY = 'the passphrase this deployment has always had';
const encoder = new TextEncoder();

/** Seals as the release before named keys did (its encode, verbatim but for where the key comes from). */
class PreviousReleaseCodec implements PayloadCodec {
  readonly #legacy = parseKey(KEY).legacy[0]!;
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', this.#legacy.key, iv);
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      return {
        metadata: { encoding: encoder.encode('binary/encrypted'), 'encryption-cipher': encoder.encode('AES-256-GCM'), 'encryption-key-id': encoder.encode(this.#legacy.id) },
        data: Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]),
      };
    });
  }
  /** It opened only what it sealed, which this release opens the same way. */
  decode(payloads: Payload[]): Promise<Payload[]> {
    return new EncryptionCodec(parseKey(KEY)).decode(payloads);
  }
}

const stub = new StubModelServer();
const config = testConfig({ THREADLINE_ENCRYPTION_KEY: KEY });
let env: TestEnv | null = null;
let previous: { worker: Worker; running: Promise<void>; client: Client } | null = null;

before(async () => {
  installTestRuntime(new DefaultLogger('WARN'));
  await stub.start();
});
after(async () => {
  if (previous?.worker.getState() === 'RUNNING') previous.worker.shutdown();
  await previous?.running;
  await env?.stop();
  await stub.stop();
});

test('a run sealed by the release before named keys resumes after the upgrade and finishes, sealing new payloads under the name', async () => {
  const [goal, script] = askThenAnswer('plan the SECRET-TRIP-77 before and after the upgrade', 'Which month?');
  stub.script(goal, script);
  const dataConverter = { payloadCodecs: [new PreviousReleaseCodec()] };
  const worker = await createWorker({ config, provider: stubProvider(stub.url), dataConverter });
  previous = { worker, running: worker.run(), client: new Client({ connection: await Connection.connect({ address: config.temporalAddress }), namespace: config.TEMPORAL_NAMESPACE, dataConverter }) };
  const { runId } = await new Runs(previous.client, config).start({ userId: 'tester', goal });
  const legacyId = parseKey(KEY).legacy[0]!.id;
  await waitFor('the run to wait for the user', async () => (await new Runs(previous!.client, config).get(runId)).status === 'waiting_user');
  worker.shutdown();
  await previous.running;
  await previous.client.connection.close();

  // The upgrade: this release's worker and client, the same THREADLINE_ENCRYPTION_KEY; nothing cached.
  env = await startTestEnv({ provider: stubProvider(stub.url), config });
  const runs = new Runs(env.client, config);
  await waitFor('the resumed run to wait for the user', async () => (await runs.get(runId)).status === 'waiting_user');
  await runs.reply(runId, 'March');
  const state = (await env.client.workflow.getHandle(runId).result()) as ExecutionState;
  assert.equal(state.status, 'completed');
  assert.equal(state.goal, goal);
  assert.deepEqual(
    state.observations.filter((o) => o.kind === 'user_reply').map((o) => o.content),
    ['March'],
  );

  const raw = await env.client.workflowService.getWorkflowExecutionHistory({ namespace: config.TEMPORAL_NAMESPACE, execution: { workflowId: runId } });
  // (Search attributes stay plain: the server indexes them.)
  const sealed = payloadsOf(raw.history).filter((p) => text(p, 'encoding') === 'binary/encrypted');
  const labels = sealed.map((p) => `${text(p, 'encryption-key-scheme') || 'legacy'}:${text(p, 'encryption-key-id')}`);
  assert.equal(labels[0], `legacy:${legacyId}`, 'the run was started by the release before');
  assert.ok(labels.includes('named:default'), `this release seals under the key's name: ${labels.join(' ')}`);
  assert.ok(
    labels.every((l) => l === `legacy:${legacyId}` || l === 'named:default'),
    labels.join(' '),
  );
  assert.ok(!Buffer.from(temporal.api.history.v1.History.encode(raw.history ?? {}).finish()).includes('SECRET-TRIP-77'));
});

const text = (p: temporal.api.common.v1.IPayload, key: string) => Buffer.from(p.metadata?.[key] ?? []).toString();

/** Every payload of the history's events, in order (whatever field of whichever event holds it). */
function payloadsOf(history: temporal.api.history.v1.IHistory | null | undefined): temporal.api.common.v1.IPayload[] {
  const found: temporal.api.common.v1.IPayload[] = [];
  const walk = (value: unknown): void => {
    if (!value || typeof value !== 'object') return;
    if (value instanceof Uint8Array) return;
    const record = value as Record<string, unknown>;
    if (record.metadata && record.data instanceof Uint8Array && (record.metadata as Record<string, unknown>).encoding) {
      found.push(record as temporal.api.common.v1.IPayload);
      return;
    }
    for (const child of Object.values(record)) walk(child);
  };
  for (const event of history?.events ?? []) walk(event);
  return found;
}
