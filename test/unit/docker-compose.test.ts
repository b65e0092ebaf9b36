/** docker-compose.yml as deployed: no default secrets, auth and encryption on, only the API public. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const compose = readFileSync(path.join(__dirname, '..', '..', 'docker-compose.yml'), 'utf8');
const lines = compose.split('\n').filter((l) => !l.trim().startsWith('#'));

test('docker-compose.yml has no default secrets and turns auth and encryption on', () => {
  for (const secret of ['POSTGRES_PASSWORD', 'THREADLINE_ADMIN_KEY', 'THREADLINE_ENCRYPTION_KEY']) {
    const uses = lines.filter((l) => l.includes(`\${${secret}`));
    assert.ok(uses.length > 0, `${secret} is used`);
    for (const use of uses) assert.match(use, new RegExp(`\\$\\{${secret}:\\?`), `${secret} must be required, not defaulted: ${use.trim()}`);
  }
  assert.ok(
    lines.some((l) => /^\s*THREADLINE_AUTH:\s*apikey\s*$/.test(l)),
    'THREADLINE_AUTH: apikey',
  );
});

test('docker-compose.yml publishes only the API beyond loopback', () => {
  const published = lines.filter((l) => /^\s*-\s*"[^"]*:\d+"\s*(#.*)?$/.test(l)).map((l) => l.trim());
  const open = published.filter((p) => !p.includes('127.0.0.1:'));
  assert.deepEqual(open, ['- "3000:3000"']);
});
