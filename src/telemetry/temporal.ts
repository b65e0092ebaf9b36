/**
 * Temporal's side of tracing: the client interceptor that starts a trace's `StartWorkflow` span
 * and carries it in the workflow's headers, and the worker's activity interceptors and the sink
 * the workflow spans (made in the sandbox, src/workflows/tracing-interceptors.ts) leave through.
 */
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { ClientInterceptors } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { Tracing } from './tracing';

/** Client interceptors when tracing is on; none (no header, no span) when it is off. */
export function tracingClientInterceptors(tracing: Tracing | undefined): ClientInterceptors | undefined {
  return tracing ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
}

/** Spans around each activity, continuing the workflow's trace, and trace ids on activity logs. */
export const tracingActivityInterceptor: ActivityInterceptorsFactory = (ctx) => ({
  inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
  outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
});

/**
 * The sink workflow spans are exported through. Always registered, since the bundle always holds
 * the workflow interceptors: without tracing here, spans of a run a tracing client started are dropped.
 */
export function workflowSpanSinks(tracing: Tracing | undefined): InjectedSinks<OpenTelemetrySinks> {
  if (tracing) return { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) };
  return { exporter: { export: { fn: () => undefined, callDuringReplay: false } } };
}
