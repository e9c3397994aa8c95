"""Symbolic derivatives of combine expressions (ir.Node), for the backward of a scan.

`derivative(node, v)` is d node / d v for a variable v (("l", j), ("r", j) or ("c", k)) as
another expression, simplified by ir.make so that an operand that does not depend on v adds
nothing (no `0 * inf`). Conventions follow torch's autograd where they matter:
- comparisons, logical and bitwise ops, floor, ceil, where's condition and casts to integer or
  bool types have zero derivative;
- min/max send the gradient to the selected operand, split it evenly on ties and send all of
  it to both where they are unordered (as torch.minimum/maximum do); abs has derivative
  sign(x) (0 at 0);
- pow(a, b) with a constant exponent never forms log(a).
"""

from __future__ import annotations

import math

from .ir import ONE, ZERO, Node, const, make, var

_NONDIFFERENTIABLE = {"<", "<=", ">", ">=", "==", "!=", "and", "or", "not", "&", "|", "^",
                      "floor", "ceil"}
_FLOAT_TYPES = ("cast:f16", "cast:bf16", "cast:f32", "cast:f64")


def _sign(x: Node) -> Node:
    return make("where", make(">", x, ZERO), ONE,
                make("where", make("<", x, ZERO), const(-1), ZERO))


# Integer literals stay integers in the text (weak i64), so a derivative made only of them, such
# as sign(a) or a clamp's where(.., 1, 0), would divide as integers: halves are float literals.
_TWO = const(2.0)
_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _local(node: Node, d: list[Node]) -> Node:
    """The derivative of `node` given the derivatives `d` of its operands."""
    op, args = node.op, node.args
    a = args[0]
    da = d[0]
    if op == "+":
        return make("+", da, d[1])
    if op == "-":
        return make("-", da, d[1])
    if op == "*":
        return make("+", make("*", da, args[1]), make("*", a, d[1]))
    if op == "/":
        b = args[1]
        return make("-", make("/", da, b), make("/", make("*", a, d[1]), make("*", b, b)))
    if op == "%":  # a - floor(a / b) * b
        return make("-", da, make("*", make("floor", make("/", a, args[1])), d[1]))
    if op == "neg":
        return make("neg", da)
    if op == "exp":
        return make("*", node, da)
    if op == "expm1":
        return make("*", make("exp", a), da)
    if op == "log":
        return make("/", da, a)
    if op == "exp2":
        return make("*", make("*", node, const(_LN2)), da)
    if op == "log2":
        return make("/", da, make("*", a, const(_LN2)))
    if op == "log10":
        return make("/", da, make("*", a, const(_LN10)))
    if op == "log1p":
        return make("/", da, make("+", a, ONE))
    if op == "sqrt":
        return make("/", da, make("*", const(2), node))
    if op == "rsqrt":  # -0.5 * a^-1.5
        return make("*", make("/", make("*", const(-0.5), node), a), da)
    if op == "abs":
        return make("*", _sign(a), da)
    if op == "tanh":
        return make("*", make("-", ONE, make("*", node, node)), da)
    if op == "sigmoid":
        return make("*", make("*", node, make("-", ONE, node)), da)
    if op == "softplus":
        return make("*", make("sigmoid", a), da)
    if op in ("erf", "erfc"):  # +-2/sqrt(pi) e^(-a^2)
        slope = make("*", const(_TWO_OVER_SQRT_PI), make("exp", make("neg", make("*", a, a))))
        return make("*", slope if op == "erf" else make("neg", slope), da)
    if op == "atan":
        return make("/", da, make("+", ONE, make("*", a, a)))
    if op == "atan2":  # of (y, x): (x dy - y dx) / (x^2 + y^2)
        x, dx = args[1], d[1]
        norm = make("+", make("*", a, a), make("*", x, x))
        return make("/", make("-", make("*", x, da), make("*", a, dx)), norm)
    if op == "sin":
        return make("*", make("cos", a), da)
    if op == "cos":
        return make("*", make("neg", make("sin", a)), da)
    if op == "pow":
        b, db = args[1], d[1]
        term = make("*", make("*", b, make("pow", a, make("-", b, ONE))), da)
        if db is ZERO:
            return term
        return make("+", term, make("*", make("*", node, make("log", a)), db))
    if op in ("min", "max"):
        b, db = args[1], d[1]
        wins = make("<" if op == "min" else ">", a, b)
        loses = make(">" if op == "min" else "<", a, b)
        # unordered (a NaN): the whole gradient to each operand, as torch.maximum's backward
        both = make("+", da, db)
        tie = make("where", make("==", a, b), make("/", both, _TWO), both)
        return make("where", wins, da, make("where", loses, db, tie))
    if op == "logaddexp":
        b, db = args[1], d[1]
        return make("+", make("*", da, make("sigmoid", make("-", a, b))),
                    make("*", db, make("sigmoid", make("-", b, a))))
    if op == "where":
        return make("where", a, d[1], d[2])
    if op in _FLOAT_TYPES:
        return make(op, da) if da is not ZERO else ZERO
    if op in _NONDIFFERENTIABLE or op.startswith("cast:"):
        return ZERO
    raise ValueError(f"associative_scan: no derivative rule for `{op}`")


def derivative(node: Node, v: Node, memo: dict[int, Node] | None = None) -> Node:
    """d node / d v, where v is a var node. `memo` (per v) shares work across outputs."""
    from .ir import topo_order
    memo = {} if memo is None else memo

    def get(n: Node) -> Node:
        if n.op == "var":
            return ONE if n is v else ZERO
        if n.op == "const":
            return ZERO
        return memo[id(n)]

    for n in topo_order([node]):
        if id(n) not in memo:
            d = [get(a) for a in n.args]
            memo[id(n)] = ZERO if all(x is ZERO for x in d) else _local(n, d)
    return get(node)


def jacobians(outputs: list[Node], leaves: list[int], captured) -> tuple[list, list, list]:
    """The Jacobians of a combine's outputs over positions p, q of `leaves` (indices of the
    differentiated leaves): L[p][q] = d out_leaves[p] / d l_leaves[q], R[p][q] the same by
    r_leaves[q], C[p][i] = d out_leaves[p] / d c_captured[i]."""
    count = max(leaves, default=-1) + 1
    memo_l = [dict() for _ in range(count)]
    memo_r = [dict() for _ in range(count)]
    L = [[derivative(outputs[i], var("l", j), memo_l[j]) for j in leaves] for i in leaves]
    R = [[derivative(outputs[i], var("r", j), memo_r[j]) for j in leaves] for i in leaves]
    C = [[derivative(outputs[i], var("c", k)) for k in captured] for i in leaves]
    return L, R, C
