/**
 * Workflow interceptors for OpenTelemetry, bundled with the workflows (src/workflow-bundle.ts).
 * A run is traced only when the client that started it was (its start carries the trace header):
 * then `RunWorkflow`, and `StartActivity` / `StartChildWorkflow` / `ContinueAsNew` under it, join
 * the caller's trace. A run started without one pays nothing, not even a tracer provider.
 * The decision comes from the start's headers, which are in history: replay makes it again alike.
 */
import type { OpenTelemetryInboundInterceptor, OpenTelemetryInternalsInterceptor, OpenTelemetryOutboundInterceptor } from '@temporalio/interceptors-opentelemetry/lib/workflow';
import type { Headers } from '@temporalio/common';
import type { WorkflowInboundCallsInterceptor, WorkflowInterceptors, WorkflowInternalsInterceptor, WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';

/** The header `@temporalio/interceptors-opentelemetry` carries a span context in. */
const TRACE_HEADER = '_tracer-data';

type OpenTelemetryWorkflowModule = typeof import('@temporalio/interceptors-opentelemetry/lib/workflow');

/**
 * Loaded only by a traced run: the sandbox evaluates the bundle's modules again for every run it
 * loads, and the OpenTelemetry SDK is heavy — an untraced run never evaluates it.
 */
function loadOpenTelemetry(): OpenTelemetryWorkflowModule {
  // A lazy load: webpack bundles it like an import, the sandbox evaluates it on first call.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- an import would be evaluated by every run
  return require('@temporalio/interceptors-opentelemetry/lib/workflow') as OpenTelemetryWorkflowModule;
}

interface Traced {
  inbound: OpenTelemetryInboundInterceptor;
  outbound: OpenTelemetryOutboundInterceptor;
  internals: OpenTelemetryInternalsInterceptor;
}

export const interceptors = (): WorkflowInterceptors => {
  // Per workflow: made when its start turns out to be traced.
  let traced: Traced | undefined;
  const hasTrace = (headers: Headers) => headers[TRACE_HEADER] !== undefined;
  /** Signals and updates are traced when both the run and the call are. */
  const tracedCall = (headers: Headers) => (traced && hasTrace(headers) ? traced : undefined);

  const inbound: WorkflowInboundCallsInterceptor = {
    execute(input, next) {
      if (!hasTrace(input.headers)) return next(input);
      const otel = loadOpenTelemetry();
      traced = { inbound: new otel.OpenTelemetryInboundInterceptor(), outbound: new otel.OpenTelemetryOutboundInterceptor(), internals: new otel.OpenTelemetryInternalsInterceptor() };
      return traced.inbound.execute(input, next);
    },
    handleSignal(input, next) {
      const t = tracedCall(input.headers);
      return t ? t.inbound.handleSignal(input, next) : next(input);
    },
    handleUpdate(input, next) {
      const t = tracedCall(input.headers);
      return t ? t.inbound.handleUpdate(input, next) : next(input);
    },
    validateUpdate(input, next) {
      const t = tracedCall(input.headers);
      if (t) t.inbound.validateUpdate(input, next);
      else next(input);
    },
    // Queries are not traced: the API polls run state with them, which would flood a trace.
  };

  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity: (input, next) => (traced ? traced.outbound.scheduleActivity(input, next) : next(input)),
    scheduleLocalActivity: (input, next) => (traced ? traced.outbound.scheduleLocalActivity(input, next) : next(input)),
    startChildWorkflowExecution: (input, next) => (traced ? traced.outbound.startChildWorkflowExecution(input, next) : next(input)),
    continueAsNew: (input, next) => (traced ? traced.outbound.continueAsNew(input, next) : next(input)),
    signalWorkflow: (input, next) => (traced ? traced.outbound.signalWorkflow(input, next) : next(input)),
    getLogAttributes: (input, next) => (traced ? traced.outbound.getLogAttributes(input, next) : next(input)),
  };

  const internals: WorkflowInternalsInterceptor = {
    dispose(input, next) {
      // The OpenTelemetry one is async only in its signature: it disables the context manager, then calls next.
      if (traced) void traced.internals.dispose(input, next);
      else next(input);
    },
  };

  return { inbound: [inbound], outbound: [outbound], internals: [internals] };
};
