"""The forward-mode derivative (JVP) of a scan, as a .scan program run by scan_jvp_op.

For y_t = f(y_{t-1}, x_t) (y_0 = x_0) with Jacobians L_t = df/dleft, R_t = df/dright and
C_t = df/dcaptured at (y_{t-1}, x_t), the tangent of y in the direction (dx, dc) is

    dy_0 = dx_0,    dy_t = L_t dy_{t-1} + R_t dx_t + C_t dc,

a forward scan over affine maps with the combine programs._affine_combine writes (a reverse
scan mirrors it: the previous step is t + 1). These are the loop's tangents, Jacobians taken
where the loop takes them, so they agree with the backward (programs.py) to the last tie: min
and max split a tie's tangent evenly as torch's forward mode does, where a scan of dual numbers
would split it in whatever order the scan combines. The L of the first step (never used) is
evaluated at a valid point (x_0 beside itself) so it cannot inject NaN.

The op's program is the combine's text with a last line naming the captured values that have a
tangent (mark_captured_tangents); it returns one tangent per floating-point leaf.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ir, programs
from .derive import jacobians

_CAPTURED_TANGENTS = "\n# captured values with a tangent: "


def mark_captured_tangents(text: str, with_tangent: list[int]) -> str:
    return text + _CAPTURED_TANGENTS + " ".join(map(str, with_tangent))


def jvp_program(text: str, xs, captured, captured_tangents, dim: int,
                reverse: bool) -> programs.CompiledScan:
    """The compiled tangent program of a text marked by mark_captured_tangents, for the
    tangents of the captured values it names (which broadcast as they do, not as the values:
    under vmap a tangent may be batched where its value is not)."""
    def build() -> programs.CompiledScan:
        combine, with_tangent = unmark(text)
        programs.float_dtype(xs, "forward-mode AD")
        program = _jvp_text(ir.parse_combine(combine), xs, captured,
                            dict(zip(with_tangent, captured_tangents)), dim, reverse)
        return programs.CompiledScan(programs.load(program, "associative_scan jvp"), "jvp", [])

    key = programs.signature("jvp", text, xs, list(captured) + list(captured_tangents), dim,
                             reverse)
    return programs.compiled(key, build)


@dataclass
class JvpPlan:
    """What the tangent program computes, over positions p, q of the floating-point leaves
    `fl`: L[p][q] = d f_fl[p] / d l_fl[q], R[p][q] = d f_fl[p] / d r_fl[q], C[p][i] =
    d f_fl[p] / d c_(with_tangent[i]); `entries`, the (p, q) where L may be nonzero."""
    fl: list[int]
    L: list[list[ir.Node]]
    R: list[list[ir.Node]]
    C: list[list[ir.Node]]
    entries: list[tuple[int, int]]


def jvp_plan(comb: ir.Combine, xs, with_tangent: list[int]) -> JvpPlan:
    fl = [j for j, x in enumerate(xs) if x.is_floating_point()]
    m = len(fl)
    L, R, C = jacobians(comb.outputs, fl, with_tangent)
    nonzero = [[L[p][q] is not ir.ZERO for q in range(m)] for p in range(m)]
    if not programs.closed_pattern(nonzero):
        nonzero = [[True] * m for _ in range(m)]
    entries = [(p, q) for p in range(m) for q in range(m) if nonzero[p][q]]
    return JvpPlan(fl, L, R, C, entries)


def unmark(text: str) -> tuple[str, list[int]]:
    """The combine text and the captured values with a tangent, of a marked text."""
    combine, _, marked = text.partition(_CAPTURED_TANGENTS)
    return combine, [int(k) for k in marked.split()]


def _jvp_text(comb: ir.Combine, xs, captured, captured_tangents: dict, dim: int,
              reverse: bool) -> str:
    """captured_tangents: captured index -> its tangent."""
    rank, d, n = xs[0].ndim, dim, comb.num_leaves
    with_tangent = list(captured_tangents)
    plan = jvp_plan(comb, xs, with_tangent)
    fl, L, R, C, entries = plan.fl, plan.L, plan.R, plan.C, plan.entries
    m = len(fl)
    dt = programs.dtype_name(xs[fl[0]])
    size = f"D{d}"

    params = [programs.param(f"{p}{i}", x, rank, True)
              for p in ("x", "y") for i, x in enumerate(xs)]
    params += [programs.param(f"c{k}", c, rank, False) for k, c in enumerate(captured)]
    params += [programs.param(f"dx{j}", xs[j], rank, True) for j in fl]
    params += [programs.param(f"dc{k}", t, rank, False) for k, t in captured_tangents.items()]

    # Steps in scan order (reverse: from the end): the first, all but the last, all but the
    # first; in_order(head, tail) puts the first step's slice before the others.
    first, but_last, but_first = ((0, 1), (0, -1), (1, size)) if not reverse else \
        ((-1, size), (1, size), (0, -1))

    def sl(name: str, steps) -> str:
        return f"slice({name}, {d}, {steps[0]}, {steps[1]})"

    def in_order(head: str, tail: str) -> str:
        return f"concat({d}, {head}, {tail})" if not reverse else f"concat({d}, {tail}, {head})"

    # The left operand of each step: the previous y, and x's own at the first step.
    lines = [f"  yp{j} = {in_order(sl(f'x{j}', first), sl(f'y{j}', but_last))}" for j in range(n)]
    env = {"l": "yp", "r": "x", "c": "c"}
    terms_b = [[(R[p][q], f"dx{fl[q]}") for q in range(m) if R[p][q] is not ir.ZERO]
               + [(C[p][i], f"dc{k}") for i, k in enumerate(with_tangent)
                  if C[p][i] is not ir.ZERO] for p in range(m)]
    a_nodes = [L[p][q] for p, q in entries]
    texts = iter(ir.print_statements(a_nodes + [t for group in terms_b for t, _ in group],
                                     lambda v: f"{env[v.value[0]]}{v.value[1]}", "e", lines))
    like = f"x{fl[0]}"
    for (p, q), node in zip(entries, a_nodes):
        expr = next(texts)
        lines.append(f"  a{p}_{q} = " + (f"{dt}({expr})" if ir.depends_on(node, ("l", "r"))
                                         else programs.full(expr, like, dt)))
    for p, group in enumerate(terms_b):
        total = " + ".join(f"{next(texts)} * {tangent}" for _, tangent in group)
        lines.append(f"  bt{p} = " + (f"{dt}({total})" if group else programs.full("0", like, dt)))
        # The first step's tangent is dx's own.
        lines.append(f"  b{p} = {in_order(sl(f'dx{fl[p]}', first), sl(f'bt{p}', but_first))}")
    leaves = [f"a{p}_{q}" for p, q in entries] + [f"b{p}" for p in range(m)]
    outs = ["_"] * len(entries) + [f"dy{fl[p]}" for p in range(m)]
    lines.append(f"  ({', '.join(outs)}) = scan affine_forward({', '.join(leaves)}) dim={d}"
                 + (" reverse" if reverse else ""))
    return (ir.print_combine(programs.affine_combine(m, entries), "affine_forward") + "\n" +
            f"program jvp({', '.join(params)}) {{\n" + "\n".join(lines) +
            f"\n  return {', '.join(f'dy{j}' for j in fl)}\n}}\n")
