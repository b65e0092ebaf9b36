/**
 * The signs, in the log of the SDK's native core, that the core has lost a run's workflow task, and
 * a way to hear them.
 *
 * sdk-core (as bundled with @temporalio/worker 1.24) buffers the tasks of a run it does not hold while
 * its cache is full. When a query task and then a real workflow task of one run wait there together,
 * it applies them last first: the query's activation is dropped, the run keeps a task that no
 * activation will complete, and every later task of the run is buffered behind it. The run stops:
 * its workflow task times out again and again for as long as that worker lives, and the worker's
 * shutdown waits for it forever. A new worker (the old one stopped polling) runs it again at once.
 * The core logs one of these lines at the moment it happens (its own consistency checks).
 */
import { DefaultLogger, type LogLevel, type LogMetadata, type Logger, type RuntimeOptions } from '@temporalio/worker';

export const LOST_TASK_SIGNS: readonly string[] = ['Extra buffered run should not have produced an activation', 'Trying to send a new WFT for a run which already has one!'];

/** True for a core log line that says a run's workflow task was lost (see the top of this file). */
export function isLostTaskSign(message: string): boolean {
  return LOST_TASK_SIGNS.some((sign) => message.startsWith(sign));
}

type Listener = (message: string) => void;
const listeners = new Set<Listener>();

/** Calls `listener` on each lost-task sign the core logs in this process; returns how to stop. */
export function onLostTask(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Hands `message` to the listeners when it is a lost-task sign; exported for tests. */
export function noteCoreLog(message: string): void {
  if (!isLostTaskSign(message)) return;
  for (const listener of listeners) listener(message);
}

/** `downstream`, hearing the core's lines on their way to it. */
class CoreWatchingLogger implements Logger {
  constructor(private readonly downstream: Logger) {}
  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if (meta?.sdkComponent === 'core') noteCoreLog(message);
    this.downstream.log(level, message, meta);
  }
  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}

/**
 * Runtime options that route the core's warnings and errors into `logger` (by default they go to the
 * console, past it) and hear its lost-task signs on the way.
 */
export function runtimeOptionsFor(logger: Logger = new DefaultLogger('WARN')): Pick<RuntimeOptions, 'logger' | 'telemetryOptions'> {
  return {
    logger: new CoreWatchingLogger(logger),
    telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
  };
}
