/**
 * Traces and logs end to end: tracing installed with an in-memory exporter, the express app, a real
 * worker on the test Temporal server and the real `openai` client to the stub model. One REST call
 * must give one trace — the request, the workflow start, the run, its activities, the model calls —
 * and the worker's log lines must name the run they belong to.
 */
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Client } from '@temporalio/client';
import type { ExecutionState } from '../../src/planning/execution-state';
import { createLogger, temporalLogger } from '../../src/telemetry/logger';
import { installTracing, type Tracing } from '../../src/telemetry/tracing';
import { dataConverterFor } from '../../src/temporal/data-converter';
import { Runs } from '../../src/temporal/runs';
import { requestJson } from '../helpers/http';
import { startRunsApi, type RunsApi } from '../helpers/runs-api';
import { StubModelServer } from '../helpers/stub-model-server';
import { activitiesOf, installTestRuntime, waitFor } from '../helpers/temporal-env';

const stub = new StubModelServer();
const exporter = new InMemorySpanExporter();
/** The worker's log lines (pino JSON), parsed. */
const logLines: Record<string, unknown>[] = [];
let tracing: Tracing;
let api: RunsApi;
const USER = `otel-${randomUUID().slice(0, 8)}@example.com`;

function scriptAddition(goal: string, expression: string, answer: string): void {
  stub.script(goal, {
    execution_plan: [
      {
        steps: [
          { type: 'tool', description: 'add', tool: 'calculator', args: { expression } },
          { type: 'respond', description: 'answer' },
        ],
      },
    ],
    replan_decision: [{ decision: 'continue' }],
    final_answer: [{ answer }],
  });
}

async function runToCompletion(runId: string): Promise<ExecutionState> {
  return waitFor(`run ${runId} to complete`, async () => {
    const res = await requestJson<ExecutionState>(api.url, 'GET', `/v1/runs/${runId}`);
    assert.equal(res.status, 200);
    assert.notEqual(res.body.status, 'failed', res.body.lastError ?? '');
    return res.body.status === 'completed' ? res.body : undefined;
  });
}

const named = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);

before(async () => {
  // Both before the client and worker exist: the client reads the installed tracing when it is made.
  tracing = installTracing({ serviceName: 'threadline-test', spanProcessor: new SimpleSpanProcessor(exporter) });
  installTestRuntime(temporalLogger(createLogger('worker', { LOG_LEVEL: 'debug' }, { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) })));
  api = await startRunsApi(stub);
});

after(async () => {
  await api?.stop();
  await tracing?.shutdown();
});

test('POST /v1/runs gives one trace: the request, StartWorkflow, RunWorkflow, the activities and the model calls', async () => {
  const goal = 'otel: what is 2+3?';
  scriptAddition(goal, '2+3', '5');
  const res = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId: USER, goal });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const { runId } = res.body;
  const done = await runToCompletion(runId);
  assert.equal(done.finalAnswer, '5');

  const request = await waitFor('the request span', async () => named(exporter.getFinishedSpans(), 'POST /v1/runs')[0]);
  const traceId = request.spanContext().traceId;
  assert.equal(request.kind, SpanKind.SERVER);
  assert.equal(request.parentSpanId, undefined, 'the request starts the trace');
  assert.equal(request.attributes['http.response.status_code'], 201);
  // The workflow's span is exported (through the worker's sink) when the run ends.
  const spans = await waitFor('the run span', async () => {
    const all = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    return named(all, 'RunWorkflow:planExecutionWorkflow').length > 0 ? all : undefined;
  });
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  const parentOf = (s: ReadableSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);

  const [start] = named(spans, 'StartWorkflow:planExecutionWorkflow');
  assert.ok(start, 'the workflow start is in the trace');
  assert.equal(start.attributes.temporalWorkflowId, runId);
  assert.equal(parentOf(start), request, 'the start is made inside the request');
  const [run] = named(spans, 'RunWorkflow:planExecutionWorkflow');
  assert.ok(run);
  assert.equal(parentOf(run), start, 'the run continues the start');

  const activities = spans.filter((s) => s.name.startsWith('RunActivity:'));
  for (const name of ['planRun', 'executeStep', 'respond'])
    assert.ok(named(activities, `RunActivity:${name}`).length > 0, `activity ${name} is in the trace: ${activities.map((s) => s.name).join(', ')}`);
  for (const activity of activities) {
    assert.match(parentOf(activity)?.name ?? '', /^StartActivity:/, `${activity.name} hangs under its StartActivity`);
    assert.equal(parentOf(parentOf(activity)!), run, `${activity.name} is scheduled by the run`);
  }

  const modelCalls = named(spans, 'chat stub-model');
  // One span per request the stub model server received for this run.
  const asked = stub.requests.filter((r) => r.goal === goal).map((r) => r.name);
  assert.ok(asked.includes('execution_plan') && asked.includes('final_answer'), asked.join(', '));
  assert.deepEqual(modelCalls.map((s) => s.attributes['threadline.reply_name']).sort(), asked.sort());
  for (const call of modelCalls) {
    assert.equal(call.kind, SpanKind.CLIENT);
    assert.equal(call.attributes['gen_ai.request.model'], 'stub-model');
    assert.equal(typeof call.attributes['gen_ai.usage.input_tokens'], 'number');
    assert.match(parentOf(call)?.name ?? '', /^RunActivity:/, 'a model call is made inside an activity');
  }
  const planCall = modelCalls.find((s) => s.attributes['threadline.reply_name'] === 'execution_plan')!;
  assert.equal(parentOf(planCall)?.name, 'RunActivity:planRun');
});

test('a run started by a client that does not trace makes no workflow spans', async () => {
  const goal = 'otel: untraced 1+1';
  scriptAddition(goal, '1+1', '2');
  const workflowSpans = () => exporter.getFinishedSpans().filter((s) => s.name.startsWith('RunWorkflow:') || s.name.startsWith('StartActivity:')).length;
  const before = workflowSpans();
  const { config, client } = api.env;
  const plain = new Client({ connection: client.connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter: dataConverterFor(config) });
  const { runId } = await new Runs(plain, config).start({ userId: USER, goal });
  const done = await runToCompletion(runId);
  assert.equal(done.finalAnswer, '2');
  // The run is over: a span of its workflow would have left through the sink with its last task.
  assert.equal(workflowSpans(), before);
  assert.equal(named(exporter.getFinishedSpans(), 'StartWorkflow:planExecutionWorkflow').filter((s) => s.attributes.temporalWorkflowId === runId).length, 0, 'no start span names the run');
});

test('activity log lines carry the runId, and the trace they belong to', async () => {
  const goal = 'otel: log 3+4';
  scriptAddition(goal, '3+4', '7');
  const res = await requestJson<{ runId: string }>(api.url, 'POST', '/v1/runs', { userId: USER, goal });
  assert.equal(res.status, 201);
  const { runId } = res.body;
  await runToCompletion(runId);
  // One line per call the run made (plan, step, answer; and a close of its own when its answering call was a regular one).
  const calls = await activitiesOf(api.env.client, runId);
  assert.ok(calls.length >= 3, calls.join(', '));
  const lines = await waitFor('log lines of the run', async () => {
    const found = logLines.filter((l) => l.runId === runId && l.msg === 'Activity completed');
    return found.length >= calls.length ? found : undefined;
  });
  for (const line of lines) {
    assert.equal(line.name, 'worker');
    assert.equal(line.workflowId, runId);
    assert.equal(typeof line.activityType, 'string');
    assert.match(String(line.trace_id), /^[0-9a-f]{32}$/, 'the line names its trace');
  }
  const start = named(exporter.getFinishedSpans(), 'StartWorkflow:planExecutionWorkflow').find((s) => s.attributes.temporalWorkflowId === runId);
  assert.ok(start);
  assert.ok(
    lines.every((l) => l.trace_id === start.spanContext().traceId),
    "the lines' trace is the request's",
  );
});
