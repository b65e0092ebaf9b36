/**
 * `npm run chat` end to end: the real client as a child process, talking HTTP
 * to the real REST API, a real Temporal server and worker, and the real
 * `openai` client against a scripted stub model. The person at the terminal is
 * the test, writing to the child's stdin.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { startApi, type ApiServer } from '../../src/api/server';
import { apiBaseUrl } from '../../src/cli/chat';
import { loadConfig, runUiUrl } from '../../src/config';
import { answer, askStep, cont, respondStep, toolStep } from '../helpers/scenarios';
import { lastMessage, StubModelServer } from '../helpers/stub-model-server';
import { startTestEnv, stubProvider, testConfig, waitFor, type TestEnv } from '../helpers/temporal-env';

const ROOT = path.resolve(__dirname, '../..');
const USER = `cli-${randomUUID().slice(0, 8)}`;
const stub = new StubModelServer();
let env: TestEnv;
let api: ApiServer;
const children: ChildProcessWithoutNullStreams[] = [];

interface Chat {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code once the process has exited and its output is read. */
  exited: Promise<number | null>;
  waitForOutput(text: string): Promise<void>;
}

/** Runs `node --import tsx src/cli/chat.ts …args` with piped stdin, as a script would. */
function chat(args: string[], extraEnv: Record<string, string> = {}): Chat {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/chat.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, THREADLINE_API_URL: api.url, ...extraEnv },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const describe = () => `\n--- stdout ---\n${out}\n--- stderr ---\n${err}`;
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited: Promise.race([exited, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`chat did not exit within 60 s${describe()}`)), 60_000).unref())]),
    async waitForOutput(text) {
      await waitFor(`chat to print ${JSON.stringify(text)}${describe()}`, async () => out.includes(text) || child.exitCode !== null, 45_000);
      assert.ok(out.includes(text), `chat exited before printing ${JSON.stringify(text)}${describe()}`);
    },
  };
}

before(async () => {
  await stub.start();
  env = await startTestEnv({ provider: stubProvider(stub.url), config: testConfig({ PORT: '0', HOST: '127.0.0.1', TEMPORAL_UI_PORT: '8312' }) });
  api = await startApi(env.config, { logger: pino({ level: 'silent' }) });
});

after(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await api?.close();
  await env?.stop();
  await stub.stop();
});

test('a run that asks: the chat shows the steps and the question, sends the typed reply, and ends with the answer and the Web UI link', async () => {
  const goal = `what is 12*7? (${USER})`;
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('calculator', { expression: '12*7' }), askStep('Should I round the result?'), respondStep] }],
    replan_decision: [cont, cont],
    // The answer quotes the reply only if it reached the model through the run.
    final_answer: [
      (req: { messages: { content: string }[] }) => ({
        answer: req.messages.some((m) => m.content.includes('no rounding please')) ? '84, exactly as you asked.' : 'the reply never arrived',
      }),
    ],
  });

  const session = chat(['--user', USER, goal]);
  await session.waitForOutput('? Should I round the result?');
  // Nothing is answered before the person types: the run waits, and so does the client.
  assert.ok(!session.stdout().includes('answer:'), session.stdout());
  session.child.stdin.end('no rounding please\n');
  const code = await session.exited;
  const out = session.stdout();
  assert.equal(code, 0, `exit code${out}${session.stderr()}`);

  const runId = /^run (\S+) started/m.exec(out)?.[1];
  assert.ok(runId, out);
  const lines = out.split('\n');
  const at = (line: string) => {
    const i = lines.indexOf(line);
    assert.notEqual(i, -1, `missing line ${JSON.stringify(line)} in:\n${out}`);
    return i;
  };
  // In the order they happened; "running" lines may be skipped when a step finishes between two polls.
  const order = [
    at('model: stub-model'),
    at('[x] 1. tool calculator {"expression":"12*7"}  → {"value":84}'),
    at('? Should I round the result?'),
    at('your reply: no rounding please'),
    at('[x] 2. ask_user: Ask the user  → "no rounding please"'),
    at('answer: 84, exactly as you asked.'),
    at(`Web UI: ${runUiUrl(env.config, runId)}`),
  ];
  assert.deepEqual(
    order,
    [...order].sort((a, b) => a - b),
    out,
  );
  assert.match(runUiUrl(env.config, runId), /^http:\/\/127\.0\.0\.1:8312\/namespaces\/default\/workflows\/run-/);
  assert.equal(lines.filter((l) => l.startsWith('? ')).length, 1, 'the question is asked exactly once');
  assert.equal(session.stderr().includes('    at '), false, 'no stack trace');
  assert.deepEqual(
    stub.misses.filter((m) => m.goal === goal).map((m) => m.name),
    [],
  );
});

/** Indexes of `expected` lines in `out`, asserting each is there and they come in this order. */
function assertInOrder(out: string, expected: (string | RegExp)[]): void {
  const lines = out.split('\n');
  let from = 0;
  for (const want of expected) {
    const i = lines.findIndex((line, n) => n >= from && (typeof want === 'string' ? line === want : want.test(line)));
    assert.notEqual(i, -1, `missing ${String(want)} after line ${from} in:\n${out}`);
    from = i + 1;
  }
}

/** A call to the API the chat talks to. */
async function apiCall<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${api.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  assert.ok(res.ok, `${method} ${path}: ${res.status}`);
  return (await res.json()) as T;
}

test('without a goal it is a conversation: commands, requests and the reply to a question, line by line from piped stdin', async () => {
  const sum = `add 2 and 2 (${USER})`;
  stub.script(sum, {
    execution_plan: [{ steps: [toolStep('calculator', { expression: '2+2' }), respondStep] }],
    replan_decision: [cont],
    final_answer: [{ answer: 'It is 4.' }],
  });
  const booking = `book a table (${USER})`;
  stub.script(booking, {
    execution_plan: [{ steps: [askStep('For how many people?'), respondStep] }],
    replan_decision: [cont],
    final_answer: [(req: { messages: { content: string }[] }) => ({ answer: req.messages.some((m) => m.content.includes('four of us')) ? 'A table for four.' : 'the reply never arrived' })],
  });
  const session = chat(['--user', USER]);
  // The reply is just the next line: the session routes it to the waiting run.
  session.child.stdin.end(`/help\n${sum}\n${booking}\nfour of us\n/exit\n`);
  const code = await session.exited;
  const out = session.stdout();
  assert.equal(code, 0, `${out}${session.stderr()}`);
  const sessionId = /^session (session-cli-\S+) started for cli-/m.exec(out)?.[1];
  assert.ok(sessionId, out);
  const runIds = [...out.matchAll(/^run (\S+) started$/gm)].map((m) => m[1]!);
  assert.equal(runIds.length, 2, out);
  assertInOrder(out, [
    /^Threadline chat — API http:\/\/127\.0\.0\.1:\d+, user "cli-/,
    `session ${sessionId} started for ${USER} (resume it later with --session ${sessionId})`,
    'you: /help',
    '/clear — forget the conversation: recent turns, task state and pending runs',
    `you: ${sum}`,
    `run ${runIds[0]} started`,
    '[x] 1. tool calculator {"expression":"2+2"}  → {"value":4}',
    'answer: It is 4.',
    `Web UI: ${runUiUrl(env.config, runIds[0]!)}`,
    `you: ${booking}`,
    `run ${runIds[1]} started`,
    '? For how many people?',
    'you: four of us',
    `(your reply went to run ${runIds[1]})`,
    '[x] 1. ask_user: Ask the user  → "four of us"',
    'answer: A table for four.',
    `Web UI: ${runUiUrl(env.config, runIds[1]!)}`,
    `bye — session ${sessionId} stays on the server (npm run chat -- --session ${sessionId})`,
  ]);
  assert.equal(out.split('\n').filter((l) => l === '? For how many people?').length, 1, 'the question is shown once');
  // The conversation is on the server: both requests and both answers are in its history.
  const view = await apiCall<{ chatHistory: { role: string; text: string }[] }>('GET', `/v1/sessions/${sessionId}`);
  const texts = view.chatHistory.map((t) => t.text);
  for (const text of [sum, booking, 'It is 4.', 'A table for four.'])
    assert.ok(
      texts.some((t) => t.includes(text)),
      `${text} in ${JSON.stringify(texts)}`,
    );
  assert.deepEqual(
    stub.misses.filter((m) => m.goal === sum || m.goal === booking).map((m) => m.name),
    [],
  );
});

test('--session resumes a conversation and says which question still waits; the next line answers it', async () => {
  const goal = `pick a colour (${USER})`;
  stub.script(goal, {
    execution_plan: [{ steps: [askStep('Which colour?'), respondStep] }],
    replan_decision: [cont],
    final_answer: [(req: { messages: { content: string }[] }) => ({ answer: req.messages.some((m) => m.content.includes('teal')) ? 'Teal it is.' : 'no reply seen' })],
  });
  const { sessionId } = await apiCall<{ sessionId: string }>('POST', '/v1/sessions', { userId: USER });
  const { runId } = await apiCall<{ runId: string }>('POST', `/v1/sessions/${sessionId}/messages`, { text: goal });
  await waitFor('the run to wait', async () => {
    const v = await apiCall<{ runs: { runId: string; status: string }[] }>('GET', `/v1/sessions/${sessionId}`);
    return v.runs.some((r) => r.runId === runId && r.status === 'waiting_user');
  });

  const session = chat(['--user', USER, '--session', sessionId]);
  session.child.stdin.end('teal\n/exit\n');
  const code = await session.exited;
  const out = session.stdout();
  assert.equal(code, 0, `${out}${session.stderr()}`);
  assertInOrder(out, [
    new RegExp(`^session ${sessionId} resumed`),
    `run ${runId} is waiting for your answer: ? Which colour?`,
    'you: teal',
    `(your reply went to run ${runId})`,
    '[x] 1. ask_user: Ask the user  → "teal"',
    'answer: Teal it is.',
    /^bye — session /,
  ]);
  // Already-shown parts of the run are not printed again.
  assert.ok(!out.includes('plan (2 steps)'), out);
});

test('--session with a goal is refused with the usage, exit code 2', async () => {
  const session = chat(['--session', 'session-x-0000000000', 'what is 1+1?']);
  assert.equal(await session.exited, 2);
  assert.match(session.stderr(), /--session is for a conversation/);
  assert.match(session.stderr(), /usage: npm run chat/);
});

test('a run that fails ends with the reason and exit code 1', async () => {
  const goal = `plan nothing (${USER})`;
  // Every attempt breaks the schema (a plan needs at least one step), so the run fails after its repair attempts.
  stub.script(goal, { execution_plan: [{ steps: [] }, { steps: [] }, { steps: [] }] });
  const session = chat(['--user', USER, goal]);
  const code = await session.exited;
  const out = session.stdout();
  assert.equal(code, 1, `${out}${session.stderr()}`);
  assert.match(out, /^the run failed: .*steps/m);
  assert.match(out, /^Web UI: http:\/\/127\.0\.0\.1:8312\/namespaces\/default\/workflows\/run-cli-/m);
  assert.ok(!out.includes('answer:'), out);
});

test('an API that is not running gets a clear message and exit code 1, not a stack trace', async () => {
  // A port that was free a moment ago and has nothing listening now.
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));

  const session = chat(['--user', USER, 'what is 1+1?'], { THREADLINE_API_URL: `http://127.0.0.1:${port}` });
  const code = await session.exited;
  assert.equal(code, 1);
  assert.match(session.stderr(), new RegExp(`cannot reach the Threadline API at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\) — is \`npm start\` running\\?`));
  assert.equal(session.stderr().includes('    at '), false, session.stderr());
});

test('the API address defaults to HOST and PORT, reached on loopback when the API listens everywhere', () => {
  const config = (vars: Record<string, string>) => loadConfig(vars);
  assert.equal(apiBaseUrl({}, config({})), 'http://127.0.0.1:3000');
  assert.equal(apiBaseUrl({}, config({ HOST: '0.0.0.0', PORT: '4100' })), 'http://127.0.0.1:4100');
  assert.equal(apiBaseUrl({}, config({ HOST: '::1', PORT: '4100' })), 'http://[::1]:4100');
  assert.equal(apiBaseUrl({ THREADLINE_API_URL: 'https://agents.example.com/' }, config({})), 'https://agents.example.com/');
  assert.throws(() => apiBaseUrl({ THREADLINE_API_URL: 'not a url' }, config({})), /THREADLINE_API_URL is not a URL/);
});

test('--engine tree --review: the plan is reviewed at the prompt (revise, then approve), the tree is drawn live, /skip at a prompt skips a task, and the run answers', async () => {
  const goal = `book a table (${USER})`;
  const first = {
    name: 'Table',
    goal,
    subtasks: [
      { name: 'Count', goal: 'how many people' },
      { name: 'Book', goal: 'book it' },
    ],
  };
  const second = { ...first, subtasks: [...first.subtasks, { name: 'Flowers', goal: 'order flowers' }, { name: 'Check', goal: 'check the booking' }] };
  stub.script(goal, {
    task_tree: [first, second],
    react_action: [
      { thought: 'need a number', action: 'ask_user', question: 'For how many people?' },
      { thought: 'got it', action: 'finish', result: 'four people' },
      { thought: 'book', action: 'finish', result: 'booked for four' },
      { thought: 'check', action: 'finish', result: 'booking confirmed' },
    ],
    final_answer: [{ answer: 'A table for four is booked and confirmed.' }],
  });
  const session = chat(['--user', USER, '--engine', 'tree', '--review', goal]);
  await session.waitForOutput('waits for your review');
  assert.match(session.stdout(), /\| +-\[ \] 1-2\. "Book" \(not started\)/, 'the proposed plan is drawn before the review');
  session.child.stdin.write('revise also check the booking\n');
  await session.waitForOutput('#tree2) waits for your review');
  session.child.stdin.write('approve\n');
  await session.waitForOutput('? For how many people?');
  session.child.stdin.end('/skip 1-3 no flowers\nfour\n');
  const code = await session.exited;
  const out = session.stdout();
  assert.equal(code, 0, `exit code${out}${session.stderr()}`);
  assert.match(out, /review: revise also check the booking/);
  assert.match(out, /\(skipped: task 1-3\)/);
  assert.match(out, /\| +-\[x\] 1-3\. "Flowers" \(skipped: skipped by the user: no flowers\)/);
  assert.match(out, /\| +-\[x\] 1-4\. "Check" \(finished: booking confirmed\)/);
  assert.match(out, /answer: A table for four is booked and confirmed\./);
  assert.match(lastMessage(stub.requestsFor(goal, 'task_tree')[1]), /Their feedback: also check the booking/);
});

test('--engine tree: /skip typed while the run just executes cancels the slow task at once; other lines get a hint', async () => {
  const goal = `tidy the garage (${USER})`;
  stub.script(goal, {
    task_tree: [
      {
        name: 'Garage',
        goal,
        subtasks: [
          { name: 'Sort', goal: 'sort the boxes slowly' },
          { name: 'Sweep', goal: 'sweep' },
        ],
      },
    ],
    react_action: [
      { thought: 'this takes long', action: 'tool', tool: 'wait', args: { seconds: 60 } },
      { thought: 'swept', action: 'finish', result: 'swept' },
    ],
    final_answer: [{ answer: 'Swept; sorting skipped.' }],
  });
  const session = chat(['--user', USER, '--engine', 'tree', goal]);
  await session.waitForOutput('(executing)');
  const started = Date.now();
  session.child.stdin.end('hello?\n/skip 1-1 too slow\n');
  const code = await session.exited;
  const out = session.stdout();
  assert.equal(code, 0, `exit code${out}${session.stderr()}`);
  assert.ok(Date.now() - started < 30_000, 'the 60 s wait was cut short');
  assert.match(out, /\(while the run works: \/skip 1-2 \[reason\] or \/redo 1-2 \[reason\]; it asks when it needs you\)/);
  assert.match(out, /\(skipped: task 1-1\)/);
  assert.match(out, /\| +-\[x\] 1-1\. "Sort" \(skipped: skipped by the user: too slow\)/);
  assert.match(out, /answer: Swept; sorting skipped\./);
});

test('long-term memory from the chat: /remember keeps a fact, /memory finds it, /forget ends it, /end ends the conversation', async () => {
  const user = `${USER}-mem`;
  const session = chat(['--user', user]);
  session.child.stdin.write('/remember my sister is Ana\n/memory who is my sister\n');
  await session.waitForOutput('1. [fact]');
  const out = session.stdout();
  const factId = /^Remembered: The user's sister is Ana\. \((fact_\S+)\)$/m.exec(out)?.[1];
  assert.ok(factId, out);
  assert.match(out, new RegExp(`^1\\. \\[fact\\] The user's sister is Ana\\. \\(${factId}\\)$`, 'm'));
  session.child.stdin.end(`/forget ${factId}\n/remember\n/end\n/exit\n`);
  assert.equal(await session.exited, 0, session.stdout() + session.stderr());
  const all = session.stdout();
  assert.match(all, new RegExp(`^Forgotten: The user's sister is Ana\\. \\(${factId}; believed until \\d{4}-`, 'm'));
  assert.match(all, /^\/remember <text> — keep a fact about you/m);
  assert.match(all, /^Ended the conversation\. What is worth keeping goes to long-term memory\.$/m);
  // Over the API: the fact is ended, not erased.
  const { facts } = await apiCall<{ facts: { id: string; validTo: string | null }[] }>('GET', `/v1/users/${user}/facts?includeInvalid=true`);
  assert.ok(facts.find((f) => f.id === factId)?.validTo, JSON.stringify(facts));
});

test('schedules from the chat: /schedules lists them with their next runs, /schedules cancel deletes one', async () => {
  const user = `${USER}-sched`;
  const made = await apiCall<{ scheduleId: string; nextRuns: string[] }>('POST', '/v1/schedules', { userId: user, goal: 'water the plants', cron: '0 9 * * MON', timeZone: 'Europe/Paris' });
  await waitFor('the schedule listed', async () => (await apiCall<{ schedules: unknown[] }>('GET', `/v1/schedules?userId=${user}`)).schedules.length === 1);
  const session = chat(['--user', user]);
  session.child.stdin.write('/schedules\n');
  await session.waitForOutput('/schedules cancel <schedule id> deletes one');
  const listed = session.stdout();
  assert.match(listed, new RegExp(`^1\\. ${made.scheduleId} — water the plants$`, 'm'));
  assert.match(listed, new RegExp(`^   cron "0 9 \\* \\* MON" \\(Europe/Paris\\); next: ${made.nextRuns[0]}`, 'm'));
  session.child.stdin.end(`/schedules cancel ${made.scheduleId}\n/schedules\n/schedules pause\n/exit\n`);
  assert.equal(await session.exited, 0, session.stdout() + session.stderr());
  const all = session.stdout();
  assert.match(all, new RegExp(`^Cancelled schedule ${made.scheduleId} \\(runs it started go on\\)\\.$`, 'm'));
  assert.match(all, /^No schedules\./m);
  assert.match(all, /^\/schedules — your schedules, with their next runs$/m, 'an unknown verb shows the usage');
  const res = await fetch(`${api.url}/v1/schedules/${made.scheduleId}`);
  assert.equal(res.status, 404);
});

test('--approval: a held call is shown and asked about; an edit with JSON args runs it with them, and the run answers', async () => {
  const goal = `compute with approval (${USER})`;
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('calculator', { expression: '2+2' }), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('42')],
  });
  const session = chat(['--user', USER, '--approval', 'calculator', goal]);
  await session.waitForOutput('? calculator({"expression":"2+2"}) waits for your approval');
  session.child.stdin.end('edit {"expression":"6*7"}\n');
  const code = await session.exited;
  const out = session.stdout();
  assert.equal(code, 0, `exit code${out}${session.stderr()}`);
  assertInOrder(out, [/waits for your approval/, /calculator \{"expression":"6\*7"\}.*42/, 'answer: 42']);
});

test('--approval in a conversation: the session holds the call, the client asks, and words that change it go to the session, whose model makes the args', async () => {
  const goal = `note that my pen is black (${USER})`;
  stub.script(goal, {
    execution_plan: [{ steps: [toolStep('notes_write', { key: 'pen', value: 'black' }), respondStep] }],
    replan_decision: [cont],
    final_answer: [answer('Noted: your pen is red.')],
  });
  const change = 'make the value red';
  stub.script(change, { approval_edit: [{ args: { key: 'pen', value: 'red' } }] });
  const session = chat(['--user', USER, '--approval', 'notes_write']);
  session.child.stdin.write(`${goal}\n`);
  await session.waitForOutput('? notes_write({"key":"pen","value":"black"}) waits for your approval');
  session.child.stdin.end(`${change}\n/exit\n`);
  const code = await session.exited;
  const out = session.stdout();
  assert.equal(code, 0, `${out}${session.stderr()}`);
  assertInOrder(out, [
    /^run \S+ started$/,
    /waits for your approval/,
    /^Edited: notes_write\(\{"key":"pen","value":"red"\}\) runs now/,
    /notes_write \{"key":"pen","value":"red"\}/,
    'answer: Noted: your pen is red.',
  ]);
  const request = stub.requestsFor(change, 'approval_edit')[0];
  assert.match(JSON.stringify(request?.messages), /\{\\"key\\":\\"pen\\",\\"value\\":\\"black\\"\}/);
});
