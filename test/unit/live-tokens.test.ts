/**
 * Live tokens without Temporal: the partial-JSON field deltas, the call ids, the payload packing,
 * the API's token hub (resets, replay from Last-Event-ID, bounds) and the watches that say which
 * runs' tokens are sent at all.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { callIdOf, FieldDeltas, humanPath, liveCallFor, withTextSink, withTokenScope, currentTextSink } from '../../src/llm/live-tokens';
import { MAX_DELTA_CHARS, MAX_PAYLOAD_BYTES, packMessages, unpackMessages, type LiveMessage, type LivePublisher } from '../../src/live/messages';
import { TokenHub, type HubEvent } from '../../src/api/token-hub';
import { packWatch, unpackWatch, WatchAnnouncer, WatchedSet, watchKey, WATCH_LINGER_MS, WATCH_TTL_MS } from '../../src/live/watch';
import { callModel, completeStructured } from '../../src/llm/structured';
import { StreamingDemoProvider } from '../../src/llm/streaming-demo';
import { initialState } from '../../src/planning/execution-state';
import type { ModelProvider, ModelRequest } from '../../src/llm/provider';

/** Feeds `text` in pieces of `size` and joins each field's deltas. */
function stream(text: string, size: number): Map<string, string> {
  const deltas = new FieldDeltas();
  const fields = new Map<string, string>();
  for (let i = 0; i < text.length; i += size) for (const { field, delta } of deltas.push(text.slice(i, i + size))) fields.set(field, (fields.get(field) ?? '') + delta);
  return fields;
}

test('an answer streamed in pieces of any size adds up to the whole answer, escapes and all', () => {
  const answer = 'Line one.\nSay "hi" — naïve café ✓ \\ done';
  const text = JSON.stringify({ answer });
  for (const size of [1, 2, 3, 7, 50]) assert.deepEqual([...stream(text, size)], [['answer', answer]], `pieces of ${size}`);
});

test('a plan streams each step’s description and question, never a tool’s arguments or the step type', () => {
  const reply = {
    steps: [
      { type: 'tool', description: 'Add the numbers', tool: 'calculator', args: { expression: '1+2', description: 'not me' } },
      { type: 'ask_user', description: 'Ask for a colour', question: 'Which colour?' },
      { type: 'respond', description: 'Answer' },
    ],
  };
  const fields = stream(JSON.stringify(reply), 5);
  assert.deepEqual(Object.fromEntries(fields), {
    'steps[0].description': 'Add the numbers',
    'steps[1].description': 'Ask for a colour',
    'steps[1].question': 'Which colour?',
    'steps[2].description': 'Answer',
  });
});

test('partial JSON: an unfinished string is its prefix so far; a fence is skipped; not JSON is nothing', () => {
  assert.deepEqual(new FieldDeltas().push('{"thought": "I think th'), [{ field: 'thought', delta: 'I think th' }]);
  assert.deepEqual(new FieldDeltas().push('{"decision": "finish", "answer": "4'), [{ field: 'answer', delta: '4' }]);
  assert.deepEqual(new FieldDeltas().push('Sure! Here is {"answer": "x"}'), []);
  assert.deepEqual(new FieldDeltas().push('```json\n{"answer": "x'), [{ field: 'answer', delta: 'x' }]);
  // The fence and the blanks before the object may come in pieces of any size.
  for (const size of [1, 2, 3, 5]) assert.deepEqual([...stream('  ```json\n {"answer": "fenced"}\n```', size)], [['answer', 'fenced']], `pieces of ${size}`);
  assert.deepEqual([...stream('```\n{"answer": "bare fence"}', 1)], [['answer', 'bare fence']]);
  assert.deepEqual([...stream('```python\nprint(1)', 2)], []);
});

test('text after the object, or JSON that breaks, streams nothing further and never throws', () => {
  const deltas = new FieldDeltas();
  assert.deepEqual(deltas.push('{"answer": "ok"}'), [{ field: 'answer', delta: 'ok' }]);
  assert.deepEqual(deltas.push('\n```\nThat is all.'), []);
  assert.deepEqual(deltas.push('{"answer": "again"}'), []);
  const broken = new FieldDeltas();
  assert.deepEqual(broken.push('{"answer": "a" "b'), [{ field: 'answer', delta: 'a' }]);
  assert.deepEqual(broken.push('c", "thought": "more"}'), []);
});

test('a field written twice keeps what was sent; only a value that grows adds to it', () => {
  assert.deepEqual([...stream('{"answer": "first", "answer": "fir"}', 3)], [['answer', 'first']]);
  assert.deepEqual([...stream('{"answer": "ab", "answer": "abcd"}', 2)], [['answer', 'abcd']]);
});

test("which values are a person's to read: human keys in the reply or in items of its lists, at any depth", () => {
  assert.equal(humanPath([], 'answer'), 'answer');
  assert.equal(humanPath(['steps', 0], 'description'), 'steps[0].description');
  assert.equal(humanPath(['subtasks', 1, 'subtasks', 0], 'goal'), 'subtasks[1].subtasks[0].goal');
  assert.equal(humanPath([], 'decision'), null);
  assert.equal(humanPath(['steps', 0, 'args'], 'description'), null);
  assert.equal(humanPath(['args'], 'name'), null);
  assert.equal(humanPath(['steps'], 'description'), null);
  assert.equal(humanPath(['steps', 0], 3), null);
});

test('a long answer streamed in small pieces is parsed once, not again at every piece', () => {
  // 64 kB in pieces of 4: a partial parse of the whole reply at every piece took ~8 s here; now far
  // less. Counted, not timed: every piece's delta is exactly that piece of the answer.
  const answer = 'lorem ipsum dolor sit amet '.repeat(2400).slice(0, 60_000);
  const text = JSON.stringify({ thought: 'long', answer });
  const deltas = new FieldDeltas();
  let pieces = 0;
  let joined = '';
  for (let i = 0; i < text.length; i += 4) {
    for (const d of deltas.push(text.slice(i, i + 4))) {
      if (d.field !== 'answer') continue;
      joined += d.delta;
      pieces++;
    }
  }
  assert.equal(joined, answer);
  assert.ok(pieces >= answer.length / 4, `the answer came in ${pieces} deltas`);
});

test('any reply, in pieces of any sizes, streams each human field whole: escapes, emoji, quotes and all', () => {
  const text = fc.string({ unit: fc.constantFrom('a', ' ', 'é', '✓', '😀', '"', '\\', '\n', '\t', '\u0001', '{', '}', '[', ',', ':'), maxLength: 80 });
  const reply = fc.record({
    thought: text,
    decision: text,
    answer: text,
    steps: fc.array(fc.record({ description: text, args: fc.record({ description: text }) }), { maxLength: 3 }),
  });
  fc.assert(
    fc.property(reply, fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 20 }), (value, sizes) => {
      const json = JSON.stringify(value);
      const deltas = new FieldDeltas();
      const fields = new Map<string, string>();
      for (let at = 0, i = 0; at < json.length; i++) {
        const size = sizes[i % sizes.length]!;
        for (const { field, delta } of deltas.push(json.slice(at, at + size))) fields.set(field, (fields.get(field) ?? '') + delta);
        at += size;
      }
      const expected = new Map<string, string>();
      if (value.thought) expected.set('thought', value.thought);
      if (value.answer) expected.set('answer', value.answer);
      value.steps.forEach((s, i) => {
        if (s.description) expected.set(`steps[${i}].description`, s.description);
      });
      assert.deepEqual(Object.fromEntries(fields), Object.fromEntries(expected));
    }),
    { numRuns: 300 },
  );
});

test('held pieces are parsed at the next push or whole, as if each had been pushed', () => {
  const pieces = ['{"tho', 'ught"', ': "th', 'inkin', 'g it ', 'over"', ', "an', 'swer"', ': "fo', 'rty-t', 'wo"}'];
  const held = new FieldDeltas();
  for (const piece of pieces.slice(0, -1)) held.hold(piece);
  assert.deepEqual(held.whole(), [
    { field: 'thought', delta: 'thinking it over' },
    { field: 'answer', delta: 'forty-t' },
  ]);
  assert.deepEqual(held.push('wo"}'), [{ field: 'answer', delta: 'wo' }], 'after whole, only what is new');
  const later = new FieldDeltas();
  for (const piece of pieces.slice(0, 3)) later.hold(piece);
  assert.deepEqual(
    later.push('inkin'),
    [
      { field: 'thought', delta: 'th' },
      { field: 'thought', delta: 'inkin' },
    ],
    'a push returns what the held pieces added too',
  );
});

test('a long delta is cut so one message always fits a payload', () => {
  const answer = 'é'.repeat(MAX_DELTA_CHARS * 2 + 10);
  const deltas = new FieldDeltas().push(JSON.stringify({ answer }));
  assert.equal(deltas.length, 3);
  const messages: LiveMessage[] = deltas.map((d, i) => ({ t: 'token', runId: 'r', callId: 'c', field: d.field, delta: d.delta, seq: i + 1 }));
  const payloads = packMessages(messages);
  for (const p of payloads) assert.ok(Buffer.byteLength(p) <= MAX_PAYLOAD_BYTES);
  assert.deepEqual(payloads.flatMap(unpackMessages), messages);
  assert.deepEqual(unpackMessages('not json'), []);
});

test('a call id is stable for the same key, name and ordinal and differs otherwise', () => {
  assert.equal(callIdOf('wf/run/3', 'final_answer', 1), callIdOf('wf/run/3', 'final_answer', 1));
  assert.notEqual(callIdOf('wf/run/3', 'final_answer', 1), callIdOf('wf/run/4', 'final_answer', 1));
  assert.notEqual(callIdOf('wf/run/3', 'final_answer', 1), callIdOf('wf/run/3', 'final_answer', 2));
});

class Collect implements LivePublisher {
  readonly messages: LiveMessage[] = [];
  wanted = () => true;
  /** Every run watched unless a test says otherwise. */
  watched = (_runId: string, _sessionId: string | undefined) => true;
  publish = (m: LiveMessage) => void this.messages.push(m);
  close = async () => undefined;
}

/** A provider that feeds its sink the reply in pieces of 4 (as a streaming server would). */
class Piecewise implements ModelProvider {
  readonly label = 'piecewise';
  constructor(private readonly replies: string[]) {}
  async complete(): Promise<string> {
    const text = this.replies.shift() ?? '';
    const sink = currentTextSink();
    for (let i = 0; sink && i < text.length; i += 4) sink(text.slice(i, i + 4));
    return text;
  }
}

test('a structured call of a run streams inside a token scope; a repair starts the call again under the same id', async () => {
  const publisher = new Collect();
  const state = { runId: 'run-1', sessionId: 'sess-1', currentStepId: 's2' };
  const request = { name: 'final_answer' as const, messages: [], context: { call: 'final_answer', state, step: { id: 's2' } } as unknown as ModelRequest['context'] };
  const reply = await withTokenScope({ publisher, key: 'wf/run/7', attempt: 1 }, () => completeStructured(new Piecewise(['{"answer": ""}', '{"answer": "forty-two"}']), request, 3));
  assert.deepEqual(reply, { answer: 'forty-two' });
  const kinds = publisher.messages.map((m) => m.t);
  assert.deepEqual(kinds.filter((k) => k === 'start').length, 2, 'the repair announced itself');
  assert.equal(kinds.at(-1), 'end');
  const callIds = new Set(publisher.messages.map((m) => m.callId));
  assert.equal(callIds.size, 1);
  const tokens = publisher.messages.filter((m) => m.t === 'token');
  assert.equal(tokens.map((m) => m.delta).join(''), 'forty-two');
  assert.ok(tokens.every((m) => m.stepId === 's2' && m.sessionId === 'sess-1' && m.field === 'answer'));
  assert.deepEqual(
    tokens.map((m) => m.seq),
    tokens.map((_m, i) => i + 1),
  );
  const second = publisher.messages.filter((m) => m.t === 'start')[1];
  assert.equal(second?.t === 'start' && second.attempt, 2);
});

test('no scope, no runId, a call that does not stream or nobody listening: no live call and no sink', async () => {
  assert.equal(liveCallFor({ name: 'final_answer', context: { call: 'final_answer', state: { runId: 'r' } } as never }), undefined);
  const publisher = new Collect();
  await withTokenScope({ publisher, key: 'k', attempt: 1 }, async () => {
    assert.equal(liveCallFor({ name: 'message_route', context: { call: 'message_route', state: { runId: 'r' } } as never }), undefined);
    assert.equal(liveCallFor({ name: 'final_answer', context: { call: 'memory_summary' } as never }), undefined);
    publisher.wanted = () => false;
    assert.equal(liveCallFor({ name: 'final_answer', context: { call: 'final_answer', state: { runId: 'r' } } as never }), undefined);
  });
  assert.equal(currentTextSink(), undefined);
  await withTextSink(
    () => undefined,
    async () => assert.ok(currentTextSink()),
  );
});

const token = (callId: string, seq: number, delta: string, runId = 'r1', sessionId?: string): LiveMessage => ({
  t: 'token',
  runId,
  ...(sessionId ? { sessionId } : {}),
  callId,
  field: 'answer',
  delta,
  seq,
});

test('hub: watchers get tokens live; a start of a call already streamed is a token_reset', () => {
  const hub = new TokenHub();
  const seen: HubEvent[] = [];
  const stop = hub.watch({ runId: 'r1' }, undefined, (e) => seen.push(e));
  hub.receive({ t: 'start', runId: 'r1', callId: 'c1', attempt: 1 });
  hub.receive(token('c1', 1, 'Hel'));
  hub.receive(token('x', 1, 'other run', 'r2'));
  hub.receive({ t: 'start', runId: 'r1', callId: 'c1', attempt: 1 }); // a local call run again after a crash
  hub.receive(token('c1', 1, 'Hello'));
  stop();
  hub.receive(token('c1', 2, '!'));
  assert.deepEqual(
    seen.map((e) => [e.event, 'delta' in e.data ? e.data.delta : null]),
    [
      ['token', 'Hel'],
      ['token_reset', null],
      ['token', 'Hello'],
    ],
  );
  assert.deepEqual(seen[1]!.data, { runId: 'r1', callId: 'c1' });
  void hub.close();
});

test('hub: a retry seen first here (attempt 2) is a reset too; a newcomer gets the open call from its start, not ended ones', () => {
  const hub = new TokenHub();
  hub.receive({ t: 'start', runId: 'r1', callId: 'c0', attempt: 1 });
  hub.receive(token('c0', 1, 'old'));
  hub.receive({ t: 'end', runId: 'r1', callId: 'c0' });
  hub.receive({ t: 'start', runId: 'r1', callId: 'c1', attempt: 2 });
  hub.receive(token('c1', 1, 'a'));
  hub.receive(token('c1', 2, 'b'));
  const seen: HubEvent[] = [];
  hub.watch({ runId: 'r1' }, undefined, (e) => seen.push(e));
  assert.deepEqual(
    seen.map((e) => e.event + ('delta' in e.data ? `:${e.data.delta}` : '')),
    ['token_reset', 'token:a', 'token:b'],
  );
  void hub.close();
});

test('hub: Last-Event-ID resumes after a token without gap or repeat; an unknown id restarts the open call with a reset', () => {
  const hub = new TokenHub();
  hub.receive({ t: 'start', runId: 'r1', sessionId: 's1', callId: 'c1', attempt: 1 });
  for (let i = 1; i <= 5; i++) hub.receive(token('c1', i, `${i}`, 'r1', 's1'));
  const first: HubEvent[] = [];
  const stop = hub.watch({ sessionId: 's1' }, undefined, (e) => first.push(e));
  stop();
  const lastSeen = first[2]!.id;
  hub.receive(token('c1', 6, '6', 'r1', 's1'));
  const resumed: HubEvent[] = [];
  hub.watch({ runId: 'r1' }, lastSeen, (e) => resumed.push(e));
  assert.deepEqual(
    resumed.map((e) => ('delta' in e.data ? e.data.delta : e.event)),
    ['4', '5', '6'],
  );
  const stranger: HubEvent[] = [];
  hub.watch({ runId: 'r1' }, 't.ffffffff.3', (e) => stranger.push(e));
  assert.deepEqual(
    stranger.map((e) => ('delta' in e.data ? e.data.delta : e.event)),
    ['token_reset', '1', '2', '3', '4', '5', '6'],
  );
  // From a state's id: what went out after that state first did.
  hub.mark('run:r1:7');
  hub.receive(token('c1', 7, '7', 'r1', 's1'));
  const fromState: HubEvent[] = [];
  hub.watch({ runId: 'r1' }, '7', (e) => fromState.push(e));
  assert.deepEqual(
    fromState.map((e) => ('delta' in e.data ? e.data.delta : e.event)),
    ['7'],
  );
  void hub.close();
});

test('hub: buffers are bounded per run and in all', () => {
  const hub = new TokenHub(undefined, { perRun: 10, total: 25 });
  for (const run of ['a', 'b', 'c', 'd']) {
    hub.receive({ t: 'start', runId: run, callId: 'c', attempt: 1 });
    for (let i = 1; i <= 20; i++) hub.receive(token('c', i, `${i}`, run));
  }
  const counts = ['a', 'b', 'c', 'd'].map((run) => {
    const seen: HubEvent[] = [];
    hub.watch({ runId: run }, undefined, (e) => seen.push(e));
    return seen.length;
  });
  assert.ok(counts.every((n) => n <= 10));
  assert.ok(counts.reduce((x, y) => x + y) <= 25);
  assert.equal(counts[3], 10, 'the newest run is kept');
  void hub.close();
});

test('hub: seq keeps growing within a call across a token_reset', () => {
  const hub = new TokenHub();
  const seqs: number[] = [];
  hub.watch({ runId: 'r1' }, undefined, (e) => 'seq' in e.data && seqs.push(e.data.seq));
  hub.receive({ t: 'start', runId: 'r1', callId: 'c1', attempt: 1 });
  for (let i = 1; i <= 3; i++) hub.receive(token('c1', i, `${i}`));
  hub.receive({ t: 'start', runId: 'r1', callId: 'c1', attempt: 2 });
  for (let i = 1; i <= 2; i++) hub.receive(token('c1', i, `${i}`));
  assert.deepEqual(seqs, [1, 2, 3, 4, 5]);
  void hub.close();
});

test('the offline demo model streams its reply in small pieces inside a run’s call', async () => {
  const publisher = new Collect();
  const state = initialState({ runId: 'run-demo-live', userId: 'ada', goal: 'what is 12*7?', model: 'offline-demo' }, new Date());
  const reply = await withTokenScope({ publisher, key: 'demo/run/1', attempt: 1 }, () =>
    callModel(new StreamingDemoProvider(0), { call: 'execution_plan', state, tools: [], maxSteps: 25, maxDepth: 2 }, 1),
  );
  const tokens = publisher.messages.filter((m) => m.t === 'token');
  assert.ok(tokens.length > 1, 'in several pieces');
  assert.equal(
    tokens
      .filter((t) => t.field === 'steps[0].description')
      .map((t) => t.delta)
      .join(''),
    reply.steps[0]?.description,
  );
});

/** A provider that hands its reply over in pieces, all at once or one per turn of the event loop. */
class Paced implements ModelProvider {
  readonly label = 'paced';
  constructor(
    private readonly reply: string,
    private readonly apart: boolean,
  ) {}
  async complete(): Promise<string> {
    const sink = currentTextSink();
    for (let i = 0; sink && i < this.reply.length; i += 3) {
      sink(this.reply.slice(i, i + 3));
      if (this.apart) await new Promise((resolve) => setImmediate(resolve));
    }
    return this.reply;
  }
}

test('pieces that arrive together are parsed once, pieces apart as each arrives; either way every token is published before the call ends', async () => {
  const reply = '{"thought": "thinking it over", "answer": "forty-two, the answer"}';
  const tokensOf = async (apart: boolean) => {
    const publisher = new Collect();
    const request = { name: 'final_answer' as const, messages: [], context: { call: 'final_answer', state: { runId: 'run-2' } } as unknown as ModelRequest['context'] };
    await withTokenScope({ publisher, key: 'wf/run/8', attempt: 1 }, () => completeStructured(new Paced(reply, apart), request, 1));
    assert.equal(publisher.messages.at(-1)?.t, 'end');
    return publisher.messages.filter((m) => m.t === 'token');
  };
  const together = await tokensOf(false);
  const apart = await tokensOf(true);
  for (const tokens of [together, apart]) {
    assert.equal(
      tokens
        .filter((m) => m.field === 'answer')
        .map((m) => m.delta)
        .join(''),
      'forty-two, the answer',
    );
    assert.equal(
      tokens
        .filter((m) => m.field === 'thought')
        .map((m) => m.delta)
        .join(''),
      'thinking it over',
    );
  }
  assert.equal(together.length, 2, 'one parse: one delta per field');
  assert.ok(apart.length > 10, `each piece apart is streamed as it comes (${apart.length} tokens)`);
});

test('a call nobody watches sends nothing; one that gets a reader mid-call sends its start and its text so far, then each delta', async () => {
  const reply = '{"thought": "thinking it over", "answer": "forty-two, the answer"}';
  const request = { name: 'final_answer' as const, messages: [], context: { call: 'final_answer', state: { runId: 'run-w', sessionId: 'sess-w' } } as unknown as ModelRequest['context'] };
  const run = async (watchedFrom: number) => {
    const publisher = new Collect();
    let pieces = 0;
    publisher.watched = (runId, sessionId) => {
      assert.equal(runId, 'run-w');
      assert.equal(sessionId, 'sess-w');
      return ++pieces > watchedFrom;
    };
    await withTokenScope({ publisher, key: 'wf/run/9', attempt: 1 }, () => completeStructured(new Paced(reply, true), request, 1));
    return publisher.messages;
  };
  // A reply nobody reads is not parsed at all; a reader's arrival parses what came before it.
  const push = FieldDeltas.prototype.push;
  let parsed = 0;
  FieldDeltas.prototype.push = function (this: FieldDeltas, piece: string) {
    parsed++;
    return push.call(this, piece);
  };
  try {
    assert.deepEqual(await run(Infinity), [], 'not watched: no start, no token, no end');
    assert.equal(parsed, 0, 'not watched: nothing parsed');
  } finally {
    FieldDeltas.prototype.push = push;
  }
  const late = await run(8);
  assert.deepEqual(
    late.map((m) => m.t),
    ['start', ...late.slice(1, -1).map(() => 'token'), 'end'],
  );
  const tokens = late.filter((m) => m.t === 'token');
  const text = (field: string) =>
    tokens
      .filter((m) => m.field === field)
      .map((m) => m.delta)
      .join('');
  assert.equal(text('thought'), 'thinking it over', 'the text before the reader came is sent first');
  assert.equal(text('answer'), 'forty-two, the answer');
  assert.deepEqual(
    tokens.map((m) => m.seq),
    tokens.map((_m, i) => i + 1),
  );
  assert.ok(tokens.length > 3, 'deltas go on one by one after the catch-up');
});

test('a call announced once stays announced: a repair after its reader left still resets it', async () => {
  const publisher = new Collect();
  let reader = true;
  publisher.watched = () => reader;
  const request = { name: 'final_answer' as const, messages: [], context: { call: 'final_answer', state: { runId: 'run-r' } } as unknown as ModelRequest['context'] };
  class LeavesThenRepairs extends Piecewise {
    override async complete(): Promise<string> {
      const text = await super.complete();
      reader = false;
      return text;
    }
  }
  await withTokenScope({ publisher, key: 'wf/run/10', attempt: 1 }, () => completeStructured(new LeavesThenRepairs(['{"answer": ""}', '{"answer": "again"}']), request, 3));
  const starts = publisher.messages.filter((m) => m.t === 'start');
  assert.equal(starts.length, 2);
  assert.equal(publisher.messages.at(-1)?.t, 'end');
});

test('watches: packed in payloads, heard for a while, announced at once and again while read, lingering after the last reader', () => {
  const keys = Array.from({ length: 400 }, (_, i) => watchKey.run(`run-${i}-${'x'.repeat(30)}`));
  const payloads = packWatch(keys, MAX_PAYLOAD_BYTES);
  assert.ok(payloads.length > 1 && payloads.every((p) => Buffer.byteLength(p) <= MAX_PAYLOAD_BYTES));
  assert.deepEqual(payloads.flatMap(unpackWatch), keys);
  assert.deepEqual(unpackWatch('{"watch": [1]}'), []);
  assert.deepEqual(unpackWatch('not json'), []);

  const set = new WatchedSet();
  assert.equal(set.has('a', undefined, 1000), false);
  set.heard([watchKey.run('a'), watchKey.session('s')], 1000);
  assert.equal(set.has('a', undefined, 1000 + WATCH_TTL_MS), true);
  assert.equal(set.has('b', 's', 1000), true, "a session's watch covers its runs");
  assert.equal(set.has('b', undefined, 1000), false);
  assert.equal(set.has('a', undefined, 1001 + WATCH_TTL_MS), false, 'forgotten when not heard again');

  const sent: string[][] = [];
  const announcer = new WatchAnnouncer((k) => sent.push([...k]));
  try {
    const leaveA = announcer.add('r:a');
    const leaveA2 = announcer.add('r:a');
    assert.deepEqual(sent, [['r:a']], 'the first reader is announced at once, the second adds nothing');
    leaveA();
    leaveA2();
    leaveA2();
    const now = Date.now();
    assert.deepEqual(announcer.keys(now), ['r:a'], 'lingers after its last reader');
    assert.deepEqual(announcer.keys(now + WATCH_LINGER_MS + 1), [], 'then is dropped');
  } finally {
    announcer.close();
  }
});
