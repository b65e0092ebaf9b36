/** The chat's live tokens (issue 29): what it writes as an answer and a thought stream, and after a reset. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LiveTokens, type TokenEvent } from '../../src/cli/render';

const tok = (callId: string, field: string, delta: string, seq: number, taskIndex?: string): TokenEvent => ({ runId: 'r', callId, field, delta, seq, ...(taskIndex ? { taskIndex } : {}) });

test('the chat writes a thought and an answer as they stream, one line each, and skips other fields', () => {
  const live = new LiveTokens();
  const out = [
    live.token(tok('c1', 'steps[0].description', 'Add', 1)),
    live.token(tok('c2', 'thought', 'I should ', 1)),
    live.token(tok('c2', 'thought', 'add.', 2)),
    live.token(tok('c3', 'answer', 'It is ', 1, '1-2')),
    live.token(tok('c3', 'answer', '42.', 2, '1-2')),
    live.close(),
    live.close(),
  ].join('');
  assert.equal(out, '  thinking: I should add.\n  answer (task 1-2): It is 42.\n');
});

test('a reset of the call being written says so; the retried call starts a new line', () => {
  const live = new LiveTokens();
  const out = [live.token(tok('c1', 'answer', 'Half', 1)), live.reset('other'), live.reset('c1'), live.token(tok('c1', 'answer', 'Whole', 1)), live.close()].join('');
  assert.equal(out, '  answer: Half …(interrupted; asked again)\n  answer: Whole\n');
});
