import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hasStateRef, resolveStateRef, StateSender, type SentState } from '../../src/engine/state-ref';

const states = [
  { runId: 'r', version: 1, steps: [], observations: [] },
  { runId: 'r', version: 2, steps: [{ id: 's1', status: 'running' }], observations: [] },
  { runId: 'r', version: 3, steps: [{ id: 's1', status: 'completed' }], observations: [{ stepId: 's1', content: 'x'.repeat(400) }] },
  { runId: 'r', version: 4, steps: [{ id: 's2', status: 'pending' }], observations: [{ stepId: 's1', content: 'x'.repeat(400) }], extra: undefined },
];

test('a worker that saw the previous call rebuilds each state from its patch alone', () => {
  const sender = new StateSender();
  let known: SentState | undefined;
  for (const state of states) {
    const ref = sender.send(state);
    const resolved = resolveStateRef(known, ref);
    assert.ok(resolved, `seq ${ref.seq} resolves`);
    assert.deepEqual(resolved.state, JSON.parse(JSON.stringify(state)));
    known = resolved;
  }
});

test('a patch carries what changed, not the state: an unchanged observation is not sent again', () => {
  const sender = new StateSender();
  sender.send(states[2]);
  const ref = sender.send(states[3]);
  assert.ok(!JSON.stringify(ref.patch).includes('x'.repeat(400)), JSON.stringify(ref.patch));
});

test('without the base the patch was made against there is nothing to resolve (the worker then asks the run); a retry of the same call resolves to what it had', () => {
  const sender = new StateSender();
  const first = sender.send(states[0]);
  const second = sender.send(states[1]);
  assert.equal(first.base, null);
  assert.equal(second.base, first.seq);
  assert.equal(resolveStateRef(undefined, second), undefined);
  const atFirst = resolveStateRef(undefined, first);
  assert.ok(atFirst);
  const atSecond = resolveStateRef(atFirst, second);
  assert.ok(atSecond);
  assert.equal(resolveStateRef(atSecond, second), atSecond);
  assert.deepEqual(sender.last, { seq: 2, state: states[1] });
});

test('the base is never changed by resolving a patch against it (an abandoned call may still read it)', () => {
  const sender = new StateSender();
  const base = resolveStateRef(undefined, sender.send(states[1]));
  assert.ok(base);
  const before = JSON.stringify(base.state);
  resolveStateRef(base, sender.send(states[2]));
  assert.equal(JSON.stringify(base.state), before);
});

test('only inputs with a stateRef are resolved', () => {
  assert.equal(hasStateRef({ state: {} }), false);
  assert.equal(hasStateRef(null), false);
  assert.equal(hasStateRef({ stateRef: { seq: 1, base: null, patch: [] } }), true);
});

test('any change of a state resolves to the state itself, sharing what did not change and leaving the base as it was', async () => {
  const fc = await import('fast-check');
  // Keys with the characters JSON pointers escape, arrays that grow, shrink and change in the middle.
  const key = fc.constantFrom('a', 'b', 'a/b', 'c~d', '~1', '');
  const json = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, fc.integer(), fc.string(), fc.boolean(), fc.constant(null), tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 5 }),
    object: fc.dictionary(key, tie('value'), { maxKeys: 5 }),
  })).object;
  fc.assert(
    fc.property(json, json, (first, second) => {
      const sender = new StateSender();
      const base = resolveStateRef(undefined, sender.send(first));
      assert.ok(base);
      assert.deepEqual(base.state, JSON.parse(JSON.stringify(first)));
      const before = JSON.stringify(base.state);
      const next = resolveStateRef(base, sender.send(second));
      assert.ok(next);
      assert.deepEqual(next.state, JSON.parse(JSON.stringify(second)));
      assert.equal(JSON.stringify(base.state), before);
    }),
    { numRuns: 500 },
  );
});

test('what a patch does not touch is shared with the base, not copied', () => {
  const sender = new StateSender();
  const base = resolveStateRef(undefined, sender.send(states[2]));
  assert.ok(base);
  const next = resolveStateRef(base, sender.send({ ...states[2], version: 9 }));
  assert.ok(next);
  const [was, is] = [base.state, next.state] as { observations: unknown[] }[];
  assert.notEqual(is, was);
  assert.equal(is?.observations, was?.observations);
});

test('a state built from the one before, sharing its parts, resolves to itself; the parts shared are not sent again', async () => {
  const fc = await import('fast-check');
  const key = fc.constantFrom('a', 'b', 'a/b', 'c~d', '');
  const json = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small' }, fc.integer(), fc.string(), fc.constant(null), fc.constant(undefined), tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 4 }),
    object: fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  })).object;
  fc.assert(
    fc.property(json, json, key, key, (first, other, k1, k2) => {
      const sender = new StateSender();
      const base = resolveStateRef(undefined, sender.send(first));
      assert.ok(base);
      // The next state keeps the first one's parts by identity, moves one and drops another.
      const second = { ...first, [k1]: { kept: first[k2], other }, list: [first, ...Object.values(first)] };
      delete (second as Record<string, unknown>)[k2 === k1 ? 'none' : k2];
      const next = resolveStateRef(base, sender.send(second));
      assert.ok(next);
      assert.deepEqual(next.state, JSON.parse(JSON.stringify(second)));
    }),
    { numRuns: 500 },
  );
});

test('a state once sent cannot be changed in place: the engine must make a new one (its workers would miss the change)', () => {
  const sender = new StateSender();
  const state = { steps: [{ id: 's1', status: 'running' }] };
  sender.send(state);
  assert.throws(() => state.steps.push({ id: 's2', status: 'pending' }), TypeError);
  assert.throws(() => {
    (state.steps[0] as { status: string }).status = 'completed';
  }, TypeError);
  const next = { steps: [...state.steps, { id: 's2', status: 'pending' }] };
  assert.deepEqual(sender.send(next).patch, [['+', '/steps/1', { id: 's2', status: 'pending' }]]);
});
