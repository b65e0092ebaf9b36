/**
 * The process log of the API and the worker: pino JSON lines at LOG_LEVEL, each carrying the
 * active trace and span ids when tracing is on. Temporal's own worker log (and what activities
 * log through `Context.current().log`) is routed into the same logger.
 */
import { isSpanContextValid, trace } from '@opentelemetry/api';
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import pino, { type DestinationStream, type Logger } from 'pino';
import type { Config } from '../config';
import { runtimeOptionsFor } from './core-faults';

export function createLogger(name: string, config: Pick<Config, 'LOG_LEVEL'>, destination?: DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    name,
    level: config.LOG_LEVEL,
    mixin() {
      const ctx = trace.getActiveSpan()?.spanContext();
      return ctx && isSpanContextValid(ctx) ? { traceId: ctx.traceId, spanId: ctx.spanId } : {};
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

/** Temporal's level names, from pino's: Temporal then filters before a message is built. */
function temporalLevel(level: string): LogLevel {
  switch (level) {
    case 'trace':
      return 'TRACE';
    case 'debug':
      return 'DEBUG';
    case 'info':
      return 'INFO';
    case 'warn':
      return 'WARN';
    default:
      return 'ERROR'; // error, fatal, silent (pino drops what is below its own level)
  }
}

/** A Temporal logger writing to `logger`: the SDK's metadata (workflowId, activityType, …) become fields. */
export function temporalLogger(logger: Logger): DefaultLogger {
  return new DefaultLogger(temporalLevel(logger.level), ({ level, message, meta }) => {
    const fields = meta ?? {};
    if (level === 'TRACE') logger.trace(fields, message);
    else if (level === 'DEBUG') logger.debug(fields, message);
    else if (level === 'INFO') logger.info(fields, message);
    else if (level === 'WARN') logger.warn(fields, message);
    else logger.error(fields, message);
  });
}

/**
 * Routes the Temporal worker Runtime's log into `logger`, the native core's warnings and errors too
 * (src/telemetry/core-faults.ts hears them), and serves its metrics for Prometheus at `metricsAddress`
 * when given. Once per process, before any worker is created.
 */
export function installRuntimeLogger(logger: Logger, metricsAddress?: string): void {
  const options = runtimeOptionsFor(temporalLogger(logger));
  Runtime.install({ ...options, telemetryOptions: { ...options.telemetryOptions, ...(metricsAddress ? { metrics: { prometheus: { bindAddress: metricsAddress } } } : {}) } });
}
