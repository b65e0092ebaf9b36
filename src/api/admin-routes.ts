/**
 * API key administration (admin keys only): `POST /v1/admin/keys {userId, role?, expiresAt?}` → 201
 * `{keyId, key}` (the key is shown this once), `GET /v1/admin/keys?userId=`, `DELETE
 * /v1/admin/keys/:keyId` (revoked from the next request on).
 */
import { Router } from 'express';
import { z } from 'zod';
import { generateKey, publicInfo } from '../auth/keys';
import { ROLES } from '../auth/roles';
import type { ApiKeyStore } from '../store/keys/key-store';
import { requireAdmin } from './authenticate';
import { ApiError } from './errors';
import { KeyCreatedSchema, KeyListSchema } from './response-schemas';
import { documented } from './routes-registry';
import { UserIdSchema } from './schemas';

const CreateKeyBody = z.object({
  userId: UserIdSchema,
  role: z.enum(ROLES).optional(),
  expiresAt: z.iso.datetime({ offset: true }).nullish(),
});
const ListKeysQuery = z.object({ userId: UserIdSchema.optional() });
const KeyParams = z.object({ keyId: z.string().regex(/^[0-9a-f]{16}$/, 'keyId is 16 hex digits') });

export function adminRouter(store: ApiKeyStore): Router {
  const router = Router();
  router.use('/v1/admin', requireAdmin);
  const routes = documented(router, 'admin');
  const admin = { 403: 'Not an admin key' } as const;
  routes.post(
    '/v1/admin/keys',
    {
      summary: 'Create an API key for a user (admin keys only)',
      request: { body: CreateKeyBody },
      responses: { 201: { description: 'The key, shown this once', schema: KeyCreatedSchema } },
      errors: admin,
    },
    async ({ body }, _req, res) => {
      const now = new Date();
      if (body.expiresAt && Date.parse(body.expiresAt) <= now.getTime()) throw new ApiError(400, 'invalid_request', 'expiresAt is in the past');
      const { key, record } = generateKey({ userId: body.userId, role: body.role ?? 'user', expiresAt: body.expiresAt ?? null }, now);
      await store.create(record);
      res.status(201).json({ keyId: record.keyId, key, userId: record.userId, role: record.role, expiresAt: record.expiresAt });
    },
  );
  routes.get(
    '/v1/admin/keys',
    {
      summary: 'List API keys, of one user or all (admin keys only); never the secrets',
      request: { query: ListKeysQuery },
      responses: { 200: { description: 'The keys', schema: KeyListSchema } },
      errors: admin,
    },
    async ({ query }, _req, res) => {
      res.json({ keys: (await store.list(query.userId)).map(publicInfo) });
    },
  );
  routes.delete(
    '/v1/admin/keys/:keyId',
    {
      summary: 'Revoke an API key, from the next request on (admin keys only)',
      request: { params: KeyParams },
      responses: { 204: { description: 'Revoked' } },
      errors: { ...admin, 404: 'No such key' },
    },
    async ({ params }, _req, res) => {
      if (!(await store.revoke(params.keyId, new Date()))) throw new ApiError(404, 'not_found', `no API key ${params.keyId}`);
      res.status(204).end();
    },
  );
  return router;
}
