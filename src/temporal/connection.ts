import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config';
import { dataConverterFor, type CodecConfig } from './data-converter';

/** A client for the configured server and namespace, writing payloads as the worker reads them. */
export async function connectClient(config: Pick<Config, 'temporalAddress' | 'TEMPORAL_NAMESPACE'> & CodecConfig): Promise<Client> {
  const connection = await Connection.connect({ address: config.temporalAddress });
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter: dataConverterFor(config) });
}
