/** Ids that differ only in case are one user wherever Threadline names a user's things. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { userKey } from '../../src/text/user-key';
import { userMemoryWorkflowId } from '../../src/workflows/memory-definitions';
import { holdsUser, userIdAttribute } from '../../src/workflows/definitions';

test('a user is keyed by the NFC, lower-cased id; the spellings of one user share it', () => {
  assert.equal(userKey('Alice'), 'alice');
  assert.equal(userKey('A\u0301lice'), userKey('\u00c1LICE'));
});

test('one memory workflow serves every spelling of a user, so its passes never run twice at once', () => {
  assert.equal(userMemoryWorkflowId('Alice'), userMemoryWorkflowId('ALICE'));
  assert.equal(userMemoryWorkflowId('alice'), 'memory-alice');
});

test('the user search attribute holds the key; a run recorded under the exact spelling still holds its user', () => {
  assert.deepEqual(userIdAttribute('Alice').value, 'alice');
  assert.equal(holdsUser('Alice', 'Alice'), true);
  assert.equal(holdsUser('alice', 'Alice'), true);
  assert.equal(holdsUser('bob', 'Alice'), false);
  assert.equal(holdsUser(undefined, 'Alice'), false);
});
