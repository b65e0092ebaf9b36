/**
 * The calculator, hardened as mathjs's security guidance asks: its own mathjs instance (the shared
 * one is never changed), the functions that reach the parser or change the instance disabled inside
 * expressions, and — before anything runs — the expression's syntax tree checked against an
 * allow-list of numbers, arithmetic and scalar functions. No assignment, no matrices or ranges, no
 * units or strings: every allowed node is O(1) on plain numbers, so 500 characters bound the time.
 */
import type { MathNode } from 'mathjs';
import { z } from 'zod';
import { defineTool } from './tool';

type MathParse = (expression: string) => MathNode;
let loading: Promise<MathParse> | undefined;

/**
 * mathjs's number-only build, loaded on the first calculation: it takes ~75 MB of the worker's memory
 * (the full build ~100 MB), which a worker whose agents never calculate does not need.
 */
function mathParser(): Promise<MathParse> {
  loading ??= import('mathjs/number').then(({ all, create }) => {
    const math = create(all ?? {}, {});
    const parse = math.parse;
    const disabled = (name: string) => () => {
      throw new Error(`${name} is disabled in the calculator`);
    };
    math.import(Object.fromEntries(['import', 'createUnit', 'evaluate', 'parse', 'compile', 'simplify', 'derivative', 'resolve', 'reviver', 'chain', 'config'].map((n) => [n, disabled(n)])), {
      override: true,
    });
    return parse;
  });
  return loading;
}

const FUNCTIONS = new Set([
  'abs',
  'sqrt',
  'cbrt',
  'exp',
  'log',
  'log2',
  'log10',
  'pow',
  'round',
  'floor',
  'ceil',
  'fix',
  'sign',
  'mod',
  'min',
  'max',
  'hypot',
  'sin',
  'cos',
  'tan',
  'asin',
  'acos',
  'atan',
  'atan2',
  'sinh',
  'cosh',
  'tanh',
  'factorial',
  'gamma',
  'gcd',
  'lcm',
]);
const CONSTANTS = new Set(['pi', 'e', 'tau', 'phi']);
const OPERATORS = new Set(['add', 'subtract', 'multiply', 'divide', 'pow', 'mod', 'unaryMinus', 'unaryPlus', 'factorial', 'dotMultiply', 'dotDivide']);
/** Arguments of one function call; min/max/hypot take lists, and a list this long is no arithmetic. */
const MAX_ARGS = 20;

/** Why `node` is not plain arithmetic, or null. */
function refusal(node: MathNode): string | null {
  let problem: string | null = null;
  node.traverse((n) => {
    if (problem) return;
    switch (n.type) {
      case 'ConstantNode':
        if (typeof (n as MathNode & { value: unknown }).value !== 'number') problem = 'only numbers are allowed';
        return;
      case 'ParenthesisNode':
        return;
      case 'SymbolNode': {
        const { name } = n as MathNode & { name: string };
        // A function's name is a SymbolNode too; FunctionNode checks it.
        if (!CONSTANTS.has(name) && !FUNCTIONS.has(name)) problem = `unknown name "${name}"`;
        return;
      }
      case 'OperatorNode': {
        const { fn, op } = n as MathNode & { fn: string; op: string };
        if (!OPERATORS.has(fn)) problem = `the operator "${op}" is not allowed`;
        return;
      }
      case 'FunctionNode': {
        const { fn, args } = n as MathNode & { fn: MathNode & { name?: string }; args: MathNode[] };
        if (fn.type !== 'SymbolNode' || !fn.name || !FUNCTIONS.has(fn.name)) problem = `the function "${fn.name ?? fn.type}" is not allowed`;
        else if (args.length > MAX_ARGS) problem = `at most ${MAX_ARGS} arguments`;
        return;
      }
      default:
        problem = `${n.type.replace(/Node$/, '').toLowerCase()} expressions are not allowed`;
    }
  });
  return problem;
}

export const calculator = defineTool({
  name: 'calculator',
  quick: true,
  description: 'Evaluates an arithmetic expression, e.g. "(12 + 30) * 2" or "sqrt(16) / 4" (numbers, + - * / ^ % !, and functions such as sqrt, abs, round, min, max, log, sin).',
  input: z.object({ expression: z.string().min(1).max(500) }),
  async handler({ expression }) {
    const tree = (await mathParser())(expression);
    const problem = refusal(tree);
    if (problem) throw new Error(`"${expression}" is not plain arithmetic: ${problem}`);
    const result: unknown = tree.compile().evaluate({});
    if (typeof result !== 'number' || !Number.isFinite(result)) {
      throw new Error(`"${expression}" does not evaluate to a finite number`);
    }
    return { value: result };
  },
});
