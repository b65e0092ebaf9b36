/**
 * OpenTelemetry tracing for the API and the worker. Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set
 * (or a test installs its own span processor): then no tracer provider is registered and every
 * span the code asks for is the API's no-op span.
 */
import { trace } from '@opentelemetry/api';
import type { Resource } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Config } from '../config';

// The SDK and the exporter are loaded only by a process that traces (≈ 7 MB of a worker's memory otherwise).
/* eslint-disable @typescript-eslint/no-require-imports -- loaded when tracing is installed, not with this module */
const sdk = () => ({
  ...(require('@opentelemetry/resources') as typeof import('@opentelemetry/resources')),
  ...(require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node')),
});
const otlp = () => ({
  ...(require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base')),
  ...(require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http')),
});
/* eslint-enable @typescript-eslint/no-require-imports */

/** The tracing a process installed: the Temporal worker needs its processor and resource for workflow spans. */
export interface Tracing {
  readonly resource: Resource;
  readonly spanProcessor: SpanProcessor;
  /** Exports what is pending and unregisters the provider. */
  shutdown(): Promise<void>;
}

let installed: Tracing | undefined;

/** The tracing this process installed, if any. */
export function activeTracing(): Tracing | undefined {
  return installed;
}

/** Registers a global tracer provider sending every span to `spanProcessor`. Once per process. */
export function installTracing(options: { serviceName: string; spanProcessor: SpanProcessor }): Tracing {
  if (installed) throw new Error('tracing is already installed in this process');
  const { Resource, NodeTracerProvider } = sdk();
  // OTEL_SERVICE_NAME, when set, wins over our name (the standard variable).
  const resource = new Resource({ 'service.name': process.env.OTEL_SERVICE_NAME || options.serviceName });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [options.spanProcessor] });
  // Registers the AsyncLocalStorage context manager and W3C propagation too.
  provider.register();
  const tracing: Tracing = {
    resource,
    spanProcessor: options.spanProcessor,
    async shutdown() {
      if (installed === tracing) installed = undefined;
      await provider.shutdown();
      trace.disable();
    },
  };
  installed = tracing;
  return tracing;
}

/** Installs OTLP/HTTP export when OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise does nothing. */
export function tracingFromConfig(config: Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT'>, serviceName: string): Tracing | undefined {
  if (!config.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  const { BatchSpanProcessor, OTLPTraceExporter } = otlp();
  // The exporter reads the endpoint (and OTEL_EXPORTER_OTLP_HEADERS etc.) from the environment itself.
  return installTracing({ serviceName, spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter()) });
}
