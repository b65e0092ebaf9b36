/**
 * `npm run keys -- <command>`: manage API keys in the configured key store (beside MEMORY_STORE),
 * e.g. to create the first admin key before turning THREADLINE_AUTH=apikey on.
 *
 *   npm run keys -- create --user alice [--role admin] [--expires 2027-01-01T00:00:00Z]
 *   npm run keys -- list [--user alice]
 *   npm run keys -- revoke <keyId>
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { generateKey, publicInfo } from '../auth/keys';
import { ROLES } from '../auth/roles';
import { createKeyStore } from '../store/keys/key-store';
import { loadConfig } from '../config';

const USAGE = 'usage: npm run keys -- create --user <userId> [--role user|admin] [--expires <ISO time>] | list [--user <userId>] | revoke <keyId>';

const Options = z.object({
  user: z.string().min(1).optional(),
  role: z.enum(ROLES).optional(),
  expires: z.iso.datetime({ offset: true }).optional(),
});

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { user: { type: 'string' }, role: { type: 'string' }, expires: { type: 'string' } } });
  const options = Options.parse(values);
  const config = loadConfig();
  if (config.MEMORY_STORE === 'memory') throw new Error('MEMORY_STORE=memory keeps keys inside the API process; create them there with POST /v1/admin/keys');
  const store = createKeyStore(config);
  await store.setup();
  try {
    const [command, arg] = positionals;
    switch (command) {
      case 'create': {
        if (!options.user) throw new Error(`create needs --user\n${USAGE}`);
        const { key, record } = generateKey({ userId: options.user, role: options.role ?? 'user', expiresAt: options.expires ?? null }, new Date());
        await store.create(record);
        console.log(`created key ${record.keyId} for ${record.userId} (${record.role}${record.expiresAt ? `, expires ${record.expiresAt}` : ''}).`);
        console.log(`key (shown only now; send it as "Authorization: Bearer <key>"):\n${key}`);
        break;
      }
      case 'list':
        for (const k of (await store.list(options.user)).map(publicInfo)) {
          console.log(`${k.keyId}  ${k.userId}  ${k.role}  created ${k.createdAt}${k.expiresAt ? `  expires ${k.expiresAt}` : ''}${k.revokedAt ? `  REVOKED ${k.revokedAt}` : ''}`);
        }
        break;
      case 'revoke':
        if (!arg) throw new Error(`revoke needs a key id\n${USAGE}`);
        if (!(await store.revoke(arg, new Date()))) throw new Error(`no key ${arg}`);
        console.log(`revoked ${arg}; it is refused from the next request on.`);
        break;
      default:
        throw new Error(USAGE);
    }
  } finally {
    await store.end();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
