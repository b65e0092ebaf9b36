import type { Config } from '../config';
import { DemoProvider } from './demo-provider';
import { OpenAIProvider } from './openai-provider';
import type { ModelProvider } from './provider';
import { StreamingDemoProvider } from './streaming-demo';

/** A real OpenAI-compatible server when either variable is set; otherwise the labelled offline demo model (streaming its replies too). */
export function selectProvider(config: Config): ModelProvider {
  if (config.OPENAI_API_KEY === undefined && config.OPENAI_BASE_URL === undefined) return config.MODEL_STREAM === 'off' ? new DemoProvider() : new StreamingDemoProvider();
  return new OpenAIProvider({
    apiKey: config.OPENAI_API_KEY,
    baseURL: config.OPENAI_BASE_URL,
    model: config.AGENT_MODEL,
    timeoutMs: config.MODEL_TIMEOUT_MS,
    stream: config.MODEL_STREAM === 'on',
  });
}

export function describeProvider(provider: ModelProvider, config: Config): string {
  return provider instanceof DemoProvider
    ? 'offline demo model (set OPENAI_API_KEY or OPENAI_BASE_URL for a real one)'
    : `${provider.label} at ${config.OPENAI_BASE_URL ?? 'https://api.openai.com/v1'}`;
}
