/** Capability switches of a run (seed 003's allow* gates): what is on, and what the prompts say is off. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allows, offForRun, refusedAction } from '../../src/planning/capabilities';
import { buildMessages } from '../../src/calls/registry';
import { initialState } from '../../src/planning/execution-state';

test('everything is on unless turned off; the prompt names only what is off', () => {
  assert.equal(allows(undefined, 'askUser'), true);
  assert.equal(allows({ tools: true }, 'tools'), true);
  assert.equal(allows({ askUser: false }, 'askUser'), false);
  assert.equal(offForRun(undefined), null);
  assert.equal(offForRun({ tools: true }), null);
  assert.equal(offForRun({ askUser: false, recall: false }), 'Off for this run — do not use: asking the person (ask_user): nobody is there to answer; recalling long-term memory.');
  assert.match(refusedAction('tools'), /^refused: calling tools and sub-agents is off for this run/);
  const state = initialState({ runId: 'r', userId: 'u', goal: 'check the build', model: 'm', allow: { askUser: false } }, new Date(0));
  const prompt = buildMessages({ call: 'execution_plan', state, tools: [], maxSteps: 5, maxDepth: 1 })
    .map((m) => m.content)
    .join('\n');
  assert.match(prompt, /Off for this run — do not use: asking the person/);
});
