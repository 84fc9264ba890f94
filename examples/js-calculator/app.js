// A chatd tool plugin in JavaScript: `calculate` evaluates an arithmetic expression
// (+ - * / % ^, parentheses, sqrt, abs, round, floor, ceil, ln, log10, sin, cos, tan, pi, e).
// Built with componentize-js against chatd's WIT (world `tool`); see docs/writing-a-plugin.md.
//
// The module's exports are the world's: `describe` lists the tools, `invoke` runs one and
// returns its output, or throws a plugin error ({tag, val}) that fails this call alone.
// It parses the expression itself: no eval, no Function.

const SCHEMA = {
  type: "object",
  properties: {
    expression: { type: "string", description: "e.g. (2 + 3) * sqrt(16) / 4" },
  },
  required: ["expression"],
  additionalProperties: false,
};
const FUNCTIONS = {
  sqrt: Math.sqrt, abs: Math.abs, round: Math.round, floor: Math.floor, ceil: Math.ceil,
  ln: Math.log, log10: Math.log10, sin: Math.sin, cos: Math.cos, tan: Math.tan,
};
const CONSTANTS = { pi: Math.PI, e: Math.E };
const MAX_LENGTH = 1000;

function invalid(message) {
  return { tag: "invalid-input", val: message };
}

function tokenize(text) {
  const tokens = [];
  const pattern = /\s*(?:(\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+)|([a-z][a-z0-9]*)|(\S))/giy;
  let match;
  while (pattern.lastIndex < text.length && (match = pattern.exec(text))) {
    if (match[1] !== undefined) tokens.push({ number: Number(match[1]) });
    else if (match[2] !== undefined) tokens.push({ name: match[2].toLowerCase() });
    else if (match[3] !== undefined) tokens.push({ op: match[3] });
  }
  return tokens;
}

// A recursive-descent parser over the grammar
//   sum := product (("+" | "-") product)*     product := power (("*" | "/" | "%") power)*
//   power := unary ("^" power)?               unary := "-" unary | atom
//   atom := number | constant | name "(" sum ")" | "(" sum ")"
function evaluate(text) {
  const tokens = tokenize(text);
  let at = 0;
  const peek = () => tokens[at] ?? {};
  const expect = (op) => {
    if (peek().op !== op) throw invalid(`expected "${op}" at token ${at + 1}`);
    at += 1;
  };
  const sum = () => {
    let value = product();
    while (peek().op === "+" || peek().op === "-") {
      const op = tokens[at++].op;
      value = op === "+" ? value + product() : value - product();
    }
    return value;
  };
  const product = () => {
    let value = power();
    while (["*", "/", "%"].includes(peek().op)) {
      const op = tokens[at++].op;
      const right = power();
      if (op !== "*" && right === 0) throw invalid("division by zero");
      value = op === "*" ? value * right : op === "/" ? value / right : value % right;
    }
    return value;
  };
  const power = () => {
    const base = unary();
    if (peek().op !== "^") return base;
    at += 1;
    return base ** power();
  };
  const unary = () => {
    if (peek().op === "-") {
      at += 1;
      return -unary();
    }
    return atom();
  };
  const atom = () => {
    const token = tokens[at++] ?? {};
    if (token.number !== undefined) return token.number;
    if (token.op === "(") {
      const value = sum();
      expect(")");
      return value;
    }
    if (token.name !== undefined) {
      if (token.name in CONSTANTS) return CONSTANTS[token.name];
      const fn = FUNCTIONS[token.name];
      if (!fn) throw invalid(`unknown name "${token.name}"`);
      expect("(");
      const value = fn(sum());
      expect(")");
      return value;
    }
    throw invalid(token.op ? `unexpected "${token.op}"` : "the expression ends too soon");
  };
  const value = sum();
  if (at < tokens.length) throw invalid(`unexpected "${tokens[at].op ?? tokens[at].name ?? tokens[at].number}"`);
  if (!Number.isFinite(value)) throw invalid("the result is not a finite number");
  return value;
}

export function describe() {
  return [
    {
      name: "calculate",
      description: "Evaluates an arithmetic expression exactly as written and returns the number.",
      parametersSchemaJson: JSON.stringify(SCHEMA),
    },
  ];
}

export function invoke(name, argumentsJson) {
  if (name !== "calculate") throw { tag: "unsupported", val: `no tool named ${name}` };
  let expression;
  try {
    expression = JSON.parse(argumentsJson).expression;
  } catch {
    expression = undefined;
  }
  if (typeof expression !== "string" || expression.trim() === "")
    throw invalid('arguments must be {"expression": "…"}');
  if (expression.length > MAX_LENGTH) throw invalid(`the expression is over ${MAX_LENGTH} characters`);
  const value = evaluate(expression);
  const text = `${expression.trim()} = ${Number(value.toPrecision(12))}`;
  return { content: text, summary: text };
}
