/**
 * The remote codec endpoint (Temporal's codec server protocol): the Web UI and the CLI send the
 * payloads they find in history to `POST /v1/codec/decode` and show what comes back, so encrypted
 * runs stay readable for whoever may call the API. `/v1/codec/encode` is the way back (the UI uses
 * it for payloads a person types in, such as a signal's argument).
 *
 * Point the UI at it: `temporal server start-dev --ui-codec-endpoint http://127.0.0.1:3000/v1/codec`
 * (npm start does this when THREADLINE_ENCRYPTION_KEY is set), or the codec setting of the UI's
 * namespace page. The browser calls it directly, hence CORS.
 */
import type { Payload, PayloadCodec } from '@temporalio/common';
import cors from 'cors';
import express, { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { requireAdmin } from './authenticate';
import { noLimit } from './limits';
import { documented } from './routes-registry';

/** A payload as the protocol writes it: metadata values and data in base64. */
const JsonPayload = z.object({ metadata: z.record(z.string(), z.string()).default({}), data: z.string().default('') });
const CodecBody = z.object({ payloads: z.array(JsonPayload) });
type JsonPayload = z.infer<typeof JsonPayload>;

/** Payload batches from a history can be large: Temporal's own limit for one message. */
const CODEC_BODY_LIMIT = '4mb';

const fromJson = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data, 'base64'),
});
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')])),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

/** A person types what the UI encodes (a signal's argument): far less than a history's batch. */
const ENCODE_BODY_LIMIT = '256kb';

/**
 * The origins the Web UI is served from (`TEMPORAL_UI_URL`, or the CLI's UI port), the only ones whose
 * pages may call the codec from a browser; on a loopback host both of its names.
 */
export function webUiOrigins(uiUrl: string): string[] {
  const url = new URL(uiUrl);
  const origins = [url.origin];
  const other = url.hostname === 'localhost' ? '127.0.0.1' : url.hostname === '127.0.0.1' ? 'localhost' : null;
  if (other) origins.push(`${url.protocol}//${other}${url.port ? `:${url.port}` : ''}`);
  return origins;
}

/**
 * Operators only: decoding shows any tenant's payloads, so with API keys only an admin key may call it
 * (a user key is 403); only the Web UI's origins get CORS headers; encode takes at most 256 KB; and
 * `limit` bounds the calls per minute (RATE_LIMIT_CODEC_PER_MINUTE).
 */
export function codecRouter(codecs: PayloadCodec[], options: { origins: string[]; limit?: RequestHandler }): Router {
  const router = Router();
  // The limit after requireAdmin: it counts per admin key, and a refused caller is not counted.
  router.use('/v1/codec', cors({ origin: options.origins, allowedHeaders: ['Content-Type', 'X-Namespace', 'Authorization'], maxAge: 600 }), requireAdmin, options.limit ?? noLimit);
  router.use('/v1/codec/encode', express.json({ limit: ENCODE_BODY_LIMIT }));
  router.use('/v1/codec/decode', express.json({ limit: CODEC_BODY_LIMIT }));
  const routes = documented(router, 'codec');
  routes.post(
    '/v1/codec/encode',
    {
      summary: "Encode payloads with the data converter's codecs (Temporal's remote codec protocol)",
      request: { body: CodecBody },
      responses: { 200: { description: 'The encoded payloads', schema: CodecBody } },
      errors: { 403: 'Not an admin key', 413: 'Over 256 KB', 429: 'Too many codec calls this minute' },
    },
    async ({ body }, _req, res) => {
      let payloads = body.payloads.map(fromJson);
      for (const codec of codecs) payloads = await codec.encode(payloads);
      res.json({ payloads: payloads.map(toJson) });
    },
  );
  routes.post(
    '/v1/codec/decode',
    {
      summary: "Decode payloads found in Temporal history, for the Web UI and the CLI (Temporal's remote codec protocol)",
      request: { body: CodecBody },
      responses: { 200: { description: 'The decoded payloads', schema: CodecBody } },
      errors: { 403: 'Not an admin key', 413: 'Over 4 MB', 429: 'Too many codec calls this minute' },
    },
    async ({ body }, _req, res) => {
      let payloads = body.payloads.map(fromJson);
      for (const codec of [...codecs].reverse()) payloads = await codec.decode(payloads);
      res.json({ payloads: payloads.map(toJson) });
    },
  );
  return router;
}
