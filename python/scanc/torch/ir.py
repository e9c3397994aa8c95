"""The Python side's picture of a combine: a hash-consed scalar expression DAG.

A combine with n leaves and k captured values is `Combine(num_leaves, num_captured, outputs)`;
its expressions are `Node`s over variables ("l", i) (left operand), ("r", i) (right operand) and
("c", i) (captured value), constants, and operations spelled as in .scan text ("+", "*", "<",
"neg", "not", "exp", "where", "cast:f32", ...). Nodes are interned, so equal expressions are one
object: memo tables keyed by node identity give common-subexpression elimination for free.

The smart constructors (`make`) fold constants and drop additions of 0 and products with 0 or 1,
which keeps derivatives small and never turns a symbolic zero into `0 * inf = nan`.

`parse_combine` reads the combine text the tracer writes (one operation per statement;
`combine_text` turns the tracer's one-line form into .scan text);
`print_statements` writes nodes back as .scan statements; `evaluate` runs nodes with any
backend (eager torch, an FX graph) given one function per operation.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

INFIX = ("+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "and", "or", "&", "|", "^",
         "<<", ">>")
PREFIX = {"neg": "-", "not": "not"}
FUNCTIONS = {
    "exp": 1, "log": 1, "log1p": 1, "expm1": 1, "exp2": 1, "log2": 1, "log10": 1, "sqrt": 1,
    "rsqrt": 1, "abs": 1, "tanh": 1,
    "sigmoid": 1, "softplus": 1, "sin": 1, "cos": 1, "erf": 1, "erfc": 1, "atan": 1,
    "floor": 1, "ceil": 1, "pow": 2, "min": 2, "max": 2, "logaddexp": 2, "atan2": 2, "where": 3,
}
DTYPES = ("bool", "i8", "i16", "i32", "i64", "u8", "f16", "bf16", "f32", "f64")


class Node:
    """One interned expression. op: "var", "const" or an operation; value: (kind, index) for a
    var, the number for a const; args: operand nodes."""

    __slots__ = ("op", "value", "args", "__weakref__")
    _table: dict[tuple, "Node"] = {}

    def __new__(cls, op: str, value: Any = None, args: tuple["Node", ...] = ()):
        # A const's key includes its type: 1 and 1.0 are different literals in .scan text.
        key = (op, type(value).__name__, repr(value), tuple(id(a) for a in args))
        node = cls._table.get(key)
        if node is None:
            node = super().__new__(cls)
            node.op, node.value, node.args = op, value, args
            cls._table[key] = node
        return node

    def is_const(self, value: float | None = None) -> bool:
        if self.op != "const":
            return False
        return value is None or self.value == value

    def __repr__(self) -> str:
        if self.op == "var":
            return f"{self.value[0]}{self.value[1]}"
        if self.op == "const":
            return repr(self.value)
        return f"{self.op}({', '.join(map(repr, self.args))})"


def var(kind: str, index: int) -> Node:
    return Node("var", (kind, index))


def const(value: float | int | bool) -> Node:
    """A constant; a bool stays one (a comparison of constants), so that `&` of it and a bool
    tensor stays bool where an int would make it int64."""
    return Node("const", value)


ZERO = const(0)
ONE = const(1)


def _fold(op: str, values: list[Any]) -> Any | None:
    """The value of `op` on constant operands, or None when it is better left to the target
    (division by zero, domain errors, casts)."""
    import operator
    binary = {"+": operator.add, "-": operator.sub, "*": operator.mul, "<": operator.lt,
              "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
              "!=": operator.ne, "min": min, "max": max, "&": operator.and_,
              "|": operator.or_, "^": operator.xor}
    try:
        if op in binary:
            return binary[op](*values)
        if op == "neg":
            return -values[0]
        if op == "/" and values[1] != 0:
            return values[0] / values[1]
        if op in ("exp", "log", "log2", "log10", "sqrt", "sin", "cos", "tanh", "erf", "erfc",
                  "atan"):
            return float(getattr(math, op)(values[0]))
        if op == "atan2":
            return math.atan2(float(values[0]), float(values[1]))
        if op == "exp2":
            return 2.0 ** float(values[0])
    except (ValueError, OverflowError, TypeError):  # TypeError: `&` of floats
        return None
    return None


def make(op: str, *args: Node, exact: bool = False) -> Node:
    """The node for `op(args)`, simplified: constants folded, x*1, x/1, x-0, --x and, unless
    `exact`, x+0, 0-x, x*0 and 0/x, which change a float's -0, inf or NaN (derivatives take
    them; a combine read from its text keeps what it computes)."""
    if args and all(a.op == "const" for a in args):
        folded = _fold(op, [a.value for a in args])
        if folded is not None and not isinstance(folded, complex):
            return const(folded)
    a = args[0] if args else None
    b = args[1] if len(args) > 1 else None
    if op == "+" and not exact:
        if a.is_const(0):
            return b
        if b.is_const(0):
            return a
    elif op == "-":
        if b.is_const(0):
            return a
        if a.is_const(0) and not exact:
            return make("neg", b)
    elif op == "*":
        if (a.is_const(0) or b.is_const(0)) and not exact:
            return ZERO
        if a.is_const(1):
            return b
        if b.is_const(1):
            return a
        if a.is_const(-1):
            return make("neg", b)
        if b.is_const(-1):
            return make("neg", a)
    elif op == "/":
        if a.is_const(0) and not exact:
            return ZERO
        if b.is_const(1):
            return a
    elif op == "neg":
        if a.op == "neg":
            return a.args[0]
    elif op == "where" and args[1] is args[2]:
        return args[1]
    return Node(op, None, tuple(args))


@dataclass
class Combine:
    """A combine: outputs[i] is leaf i's result as a function of ("l", j), ("r", j), ("c", k)."""
    num_leaves: int
    num_captured: int
    outputs: list[Node]


# ---- reading the tracer's text ----

_HEADER = re.compile(r"combine\s+\w+\s*\(([^|]*)\|([^;)]*)(?:;([^)]*))?\)\s*\{")
_NAME = re.compile(r"[lrct]\d+$")


def _operand(token: str, temps: dict[str, Node]) -> Node:
    token = token.strip()
    if _NAME.match(token):
        if token[0] == "t":
            return temps[token]
        return var(token[0], int(token[1:]))
    text = token.strip("()")
    try:
        return const(int(text))
    except ValueError:
        return const(float(text))


def _split_args(text: str) -> list[str]:
    return [t for t in (s.strip() for s in text.split(",")) if t]


def combine_text(program: str) -> str:
    """The .scan text of a combine as scanc's op carries it: one line with statements separated
    by `;` (see trace.py), turned into one statement per line. Text that already has several
    lines (programs exported before the one-line form) is returned as it is."""
    if "\n" in program:
        return program
    head, _, body = program.partition("{")
    statements = [s.strip() for s in body.rpartition("}")[0].split(";")]
    return head + "{\n" + "".join(f"  {s}\n" for s in statements if s) + "}\n"


def parse_combine(text: str) -> Combine:
    """Reads combine text in the form the tracer writes (see trace.py; one line or several): a
    header, statements `tK = a OP b`, `tK = - a`, `tK = not a`, `tK = fn(a, ...)`,
    `tK = f32(a)`, and a return."""
    text = combine_text(text)
    header = _HEADER.search(text)
    if header is None:
        raise ValueError(f"not a combine written by scanc.torch:\n{text}")
    num_leaves = len(_split_args(header.group(1)))
    num_captured = len(_split_args(header.group(3) or ""))
    temps: dict[str, Node] = {}
    outputs: list[Node] = []
    for line in text[header.end():].splitlines():
        line = line.strip()
        if not line or line == "}":
            continue
        if line.startswith("return"):
            outputs = [_operand(t, temps) for t in _split_args(line[len("return"):])]
            continue
        name, expr = (s.strip() for s in line.split("=", 1))
        temps[name] = _parse_expr(expr, temps)
    return Combine(num_leaves, num_captured, outputs)


def _parse_expr(expr: str, temps: dict[str, Node]) -> Node:
    call = re.match(r"(\w+)\((.*)\)$", expr)
    if call and not _NAME.match(call.group(1)):
        fn, args = call.group(1), [_operand(t, temps) for t in _split_args(call.group(2))]
        return make(f"cast:{fn}" if fn in DTYPES else fn, *args, exact=True)
    parts = expr.split()
    if len(parts) == 2:
        return make("neg" if parts[0] == "-" else "not", _operand(parts[1], temps), exact=True)
    if len(parts) == 3:
        return make(parts[1], _operand(parts[0], temps), _operand(parts[2], temps), exact=True)
    return _operand(expr, temps)


# ---- writing and running nodes ----

def literal(value: float | int) -> str:
    """A number as .scan text: `inf`, `nan`, `2.5`, `(-1.0)`, a bool as 1 or 0."""
    if isinstance(value, bool):
        return "1" if value else "0"
    text = repr(value)
    if text.startswith("-"):
        return f"({text})"
    return text


def topo_order(outputs: list[Node]) -> list[Node]:
    """Operation nodes reachable from `outputs`, operands first (iterative: no recursion
    limit on long chains)."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in outputs:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in seen or node.op in ("var", "const"):
                continue
            if expanded:
                seen.add(id(node))
                order.append(node)
            else:
                stack.append((node, True))
                stack.extend((a, False) for a in reversed(node.args))
    return order


def print_statements(outputs: list[Node], names: Callable[[Node], str], prefix: str,
                     lines: list[str], indent: str = "  ") -> list[str]:
    """Appends one .scan statement per operation node to `lines` (temporaries named
    prefix0, prefix1, ...) and returns the text of each output. `names` gives a var's text."""
    text: dict[int, str] = {}

    def ref(node: Node) -> str:
        if node.op == "var":
            return names(node)
        if node.op == "const":
            return literal(node.value)
        return text[id(node)]

    for node in topo_order(outputs):
        args = [ref(a) for a in node.args]
        if node.op in INFIX:
            expr = f"{args[0]} {node.op} {args[1]}"
        elif node.op in PREFIX:
            expr = f"{PREFIX[node.op]} {args[0]}"
        elif node.op.startswith("cast:"):
            expr = f"{node.op[5:]}({args[0]})"
        else:
            expr = f"{node.op}({', '.join(args)})"
        name = f"{prefix}{len(text)}"
        lines.append(f"{indent}{name} = {expr}")
        text[id(node)] = name
    return [ref(o) for o in outputs]


def print_combine(comb: Combine, name: str = "combine_fn") -> str:
    """comb as one line of .scan text, in the form the tracer writes (leaves l0.., r0..,
    captured c0.., one operation per statement, `;` between them)."""
    lines: list[str] = []
    results = print_statements(comb.outputs, lambda v: f"{v.value[0]}{v.value[1]}", "t", lines,
                               indent="")
    names = lambda kind, count: ", ".join(f"{kind}{i}" for i in range(count))  # noqa: E731
    captured = f"; {names('c', comb.num_captured)}" if comb.num_captured else ""
    body = "; ".join(lines + [f"return {', '.join(results)}"])
    return (f"combine {name}({names('l', comb.num_leaves)} | {names('r', comb.num_leaves)}"
            f"{captured}) {{ {body} }}")


def evaluate(outputs: list[Node], env: Callable[[Node], Any],
             apply: Callable[[str, list[Any]], Any]) -> list[Any]:
    """The outputs computed by `apply(op, operand values)`; vars come from `env`, constants
    are passed as Python numbers."""
    values: dict[int, Any] = {}

    def get(node: Node) -> Any:
        if node.op == "var":
            return env(node)
        if node.op == "const":
            return node.value
        return values[id(node)]

    for node in topo_order(outputs):
        values[id(node)] = apply(node.op, [get(a) for a in node.args])
    return [get(o) for o in outputs]


def depends_on(node: Node, kinds: tuple[str, ...]) -> bool:
    """Whether `node` reads a var of one of `kinds` ("l", "r", "c")."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if n.op == "var" and n.value[0] in kinds:
            return True
        stack.extend(n.args)
    return False
