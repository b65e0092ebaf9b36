/** The core's lost-task signs (src/telemetry/core-faults.ts): which lines are heard, and from whom. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LogLevel, LogMetadata, Logger } from '@temporalio/worker';
import { isLostTaskSign, LOST_TASK_SIGNS, onLostTask, runtimeOptionsFor } from '../../src/telemetry/core-faults';

test('the signs are the core checks that fire when a buffered task is lost', () => {
  for (const sign of LOST_TASK_SIGNS) assert.equal(isLostTaskSign(sign), true);
  assert.equal(isLostTaskSign(`${LOST_TASK_SIGNS[1]} with more words`), true);
  assert.equal(isLostTaskSign('Tried to complete untracked local activity'), false);
  assert.equal(isLostTaskSign(`note: ${LOST_TASK_SIGNS[0]}`), false);
});

test("the runtime's logger hears the core's signs, passes every line on, and ignores the same words from elsewhere", () => {
  const passed: [LogLevel, string, LogMetadata | undefined][] = [];
  const downstream: Logger = {
    log: (level, message, meta) => void passed.push([level, message, meta]),
    trace: () => undefined,
    debug: () => undefined,
    info: () => undefined,
    warn: () => undefined,
    error: () => undefined,
  };
  const options = runtimeOptionsFor(downstream);
  assert.deepEqual(options.telemetryOptions?.logging, { filter: { core: 'WARN', other: 'ERROR' }, forward: {} });
  const heard: string[] = [];
  const stop = onLostTask((message) => heard.push(message));
  try {
    const logger = options.logger!;
    logger.log('ERROR', LOST_TASK_SIGNS[0]!, { sdkComponent: 'core' });
    logger.error(LOST_TASK_SIGNS[1]!, { sdkComponent: 'worker' });
    logger.warn('Tried to complete untracked local activity', { sdkComponent: 'core' });
    assert.deepEqual(heard, [LOST_TASK_SIGNS[0]]);
    assert.deepEqual(
      passed.map(([level, message]) => [level, message]),
      [
        ['ERROR', LOST_TASK_SIGNS[0]],
        ['ERROR', LOST_TASK_SIGNS[1]],
        ['WARN', 'Tried to complete untracked local activity'],
      ],
    );
  } finally {
    stop();
  }
  heard.length = 0;
  options.logger!.log('ERROR', LOST_TASK_SIGNS[0]!, { sdkComponent: 'core' });
  assert.deepEqual(heard, [], 'no longer heard once stopped');
});
