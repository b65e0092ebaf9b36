/** One message of a chat-completions prompt: what every prompt builder makes and every provider sends. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}
