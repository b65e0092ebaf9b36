// Every workflow the worker registers. Workflow code only: bundled and run in Temporal's sandbox.
export { planExecutionWorkflow } from './plan-execution';
export { agentSessionWorkflow } from './session';
export { userMemoryWorkflow } from './user-memory';
