import { readFileSync } from 'node:fs';
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import type { Config } from '../config';
import { tracingClientInterceptors } from '../telemetry/temporal';
import { activeTracing } from '../telemetry/tracing';
import { dataConverterFor, type CodecConfig } from './data-converter';

/** What reaching the server takes beyond its address: TLS (mTLS with a client certificate) and an API key, for Temporal Cloud. */
export type ConnectionConfig = Pick<Config, 'temporalAddress'> & Partial<Pick<Config, 'TEMPORAL_API_KEY' | 'TEMPORAL_TLS_CERT' | 'TEMPORAL_TLS_KEY' | 'TEMPORAL_TLS_CA' | 'TEMPORAL_TLS'>>;

/**
 * The options of a connection to the configured server, for the client and the worker alike: the
 * address, then TLS when a certificate, a CA, an API key or TEMPORAL_TLS=true asks for it (an API key
 * is only ever sent over TLS). A certificate without its key, or a file that cannot be read, is an error
 * that names the setting.
 */
export function connectionOptions(config: ConnectionConfig): { address: string; tls?: TLSConfig | boolean; apiKey?: string } {
  const read = (name: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new Error(`${name}=${file} cannot be read: ${(err as Error).message}`);
    }
  };
  if (!!config.TEMPORAL_TLS_CERT !== !!config.TEMPORAL_TLS_KEY) throw new Error('TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: set both (mTLS) or neither');
  const tlsConfig: TLSConfig = {
    ...(config.TEMPORAL_TLS_CERT && config.TEMPORAL_TLS_KEY
      ? { clientCertPair: { crt: read('TEMPORAL_TLS_CERT', config.TEMPORAL_TLS_CERT), key: read('TEMPORAL_TLS_KEY', config.TEMPORAL_TLS_KEY) } }
      : {}),
    ...(config.TEMPORAL_TLS_CA ? { serverRootCACertificate: read('TEMPORAL_TLS_CA', config.TEMPORAL_TLS_CA) } : {}),
  };
  const tls = Object.keys(tlsConfig).length > 0 || !!config.TEMPORAL_API_KEY || config.TEMPORAL_TLS === 'true';
  if (config.TEMPORAL_TLS === 'false' && tls) throw new Error('TEMPORAL_TLS=false, but a certificate, a CA or an API key needs TLS');
  return {
    address: config.temporalAddress,
    ...(tls ? { tls: Object.keys(tlsConfig).length > 0 ? tlsConfig : true } : {}),
    ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}),
  };
}

/**
 * A client for the configured server and namespace, writing payloads as the worker reads them;
 * when this process traces (src/telemetry/tracing.ts), workflow starts and signals join the caller's trace.
 */
export async function connectClient(config: Pick<Config, 'TEMPORAL_NAMESPACE'> & ConnectionConfig & CodecConfig): Promise<Client> {
  const connection = await Connection.connect(connectionOptions(config));
  const interceptors = tracingClientInterceptors(activeTracing());
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter: dataConverterFor(config), ...(interceptors ? { interceptors } : {}) });
}
