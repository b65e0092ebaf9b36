import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';
import { tracingClientInterceptors } from '../telemetry/temporal';
import { activeTracing } from '../telemetry/tracing';
import { dataConverterFor, type CodecConfig } from './data-converter';

/**
 * A client for the configured server and namespace, writing payloads as the worker reads them;
 * when this process traces (src/telemetry/tracing.ts), workflow starts and signals join the caller's trace.
 */
export async function connectClient(config: Pick<Config, 'temporalAddress' | 'TEMPORAL_NAMESPACE'> & CodecConfig): Promise<Client> {
  const connection = await Connection.connect({ address: config.temporalAddress });
  const interceptors = tracingClientInterceptors(activeTracing());
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter: dataConverterFor(config), ...(interceptors ? { interceptors } : {}) });
}
