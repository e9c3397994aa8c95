"""The .scan programs behind scanc.torch's ops, compiled once per signature and run via DLPack.

forward:  the scan itself, with symbolic sizes (one compiled program serves every size).
backward: for y_t = f(y_{t-1}, x_t) (y_0 = x_0) with Jacobians L_t = df/dleft, R_t = df/dright,
          C_t = df/dcaptured at (y_{t-1}, x_t), the gradient wrt y_t solves
              g_t = gbar_t + L_{t+1}^T g_{t+1},
          a reverse scan over affine maps g -> A g + b with A_t = L_{t+1}^T and the combine
          (A', b' | A, b) -> (A A', A b' + b) (the same formula serves the forward scan a reverse
          scan's backward needs). Then dx_0 = g_0, dx_t = R_t^T g_t and the captured values get
          C_t^T g_t per element (summed to their shape by the caller). A reverse scan mirrors
          every shift. The shift by one is slice/concat; the A of the last step (never used) is
          evaluated at a valid point (x repeated) so it cannot inject NaN. Entries of A that are
          symbolically zero are left out when their zero pattern survives the products.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import torch
from torch._C import _from_dlpack, _to_dlpack

import scanc

from . import ir
from .derive import jacobians
from .dtypes import DTYPE_NAMES

_CACHE: dict[tuple, "CompiledScan"] = {}
_LOCK = threading.Lock()


@dataclass
class CompiledScan:
    module: scanc.Module
    program: str
    captured_outputs: list[int]  # backward only: captured indices that get a contribution


def dtype_name(t: torch.Tensor) -> str:
    name = DTYPE_NAMES.get(t.dtype)
    if name is None:
        raise ValueError(f"associative_scan: dtype {t.dtype} is not supported by scanc")
    return name


def param(name: str, t: torch.Tensor, leaf_rank: int, leaf: bool) -> str:
    dims = ", ".join(f"D{j}" if leaf or not _is_one(t.shape[j]) else "1" for j in range(leaf_rank))
    return f"{name}: {dtype_name(t)}[{dims}]"


def signature(kind: str, text: str, xs, captured, dim: int, reverse: bool) -> tuple:
    return (kind, text, dim, reverse, tuple(x.dtype for x in xs), xs[0].ndim,
            tuple((c.dtype, tuple(_is_one(s) for s in c.shape)) for c in captured))


def _is_one(size) -> bool:
    """A captured dim that broadcasts: 1, known as such (a symbolic size under torch.compile
    or export, in the fake implementation's check, counts as a full dim)."""
    return type(size) is int and size == 1


_BACKENDS: dict[str, str] = {}  # device type -> the scanc backend that runs there


def _backend(device: torch.device) -> str:
    backend = _BACKENDS.get(device.type)
    if backend is None:
        if device.type == "cuda":
            backend = "cuda"
        elif device.type == "cpu":
            backend = "cpu" if "cpu" in scanc.available_backends() else "reference"
        else:
            raise ValueError(f"associative_scan: tensors on {device} are not supported")
        _BACKENDS[device.type] = backend
    return backend


def run(compiled: CompiledScan, inputs: list[torch.Tensor],
        outputs: list[torch.Tensor] | None = None) -> tuple[torch.Tensor, ...]:
    """Runs on the inputs' device: the CPU backend with torch's thread count, or CUDA on the
    current stream. `outputs` (CUDA): tensors the results are written into, and returned."""
    device = inputs[0].device
    backend = _backend(device)
    stream = torch.cuda.current_stream(device).cuda_stream if backend == "cuda" else 0
    # DLPack capsules both ways, made and read in C: Tensor.__dlpack__ and the torch export of
    # scanc's bindings are Python whose checks cost more than a small scan (__dlpack__ also
    # refuses tensors that require grad, which a capsule does not care about).
    capsules = [_to_dlpack(t) for t in inputs]
    given = None if outputs is None else [_to_dlpack(o) for o in outputs]
    outs = compiled.module.run_tensors(compiled.program, capsules, backend=backend,
                                       framework="dlpack", num_threads=torch.get_num_threads(),
                                       stream=stream, outputs=given)
    if outputs is not None:
        return tuple(outputs)
    # A custom op's outputs may not alias its inputs (scanc may hand back an input untouched;
    # cloning an empty output that "aliases" is harmless).
    ptrs = [t.data_ptr() for t in inputs]
    outs = [_from_dlpack(o) for o in outs]  # framework="dlpack": scanc hands back capsules
    return tuple(o.clone() if o.data_ptr() in ptrs else o for o in outs)


_PINNED: dict[tuple, tuple[str, list[int]]] = {}  # (text, literals) -> (pinned text, kept)
_NUMBERS = re.compile(r"#\s*numbers((?:\s+c\d+)+)\s*$")
_CAPTURED_NAME = re.compile(r"\bc(\d+)\b")


def number_captures(text: str) -> list[int]:
    """The indices of the captured values that the tracer made from Python numbers (under
    Dynamo a float has no text, so it travels as a zero-dim tensor: trace.py)."""
    marker = _NUMBERS.search(text) if "#" in text else None
    return [int(name[1:]) for name in marker.group(1).split()] if marker else []


def _literal(value: torch.Tensor) -> str:
    if value.dtype == torch.bool:
        return "1" if value.item() else "0"
    return ir.literal(float(value.item()) if value.is_floating_point() else int(value.item()))


def pin_numbers(text: str, captured: list) -> tuple[str, list]:
    """The combine with its captured numbers written as literals of their values (captured[k]
    for each number k: a zero-dim tensor or a Python number), as an eager trace writes them,
    and the captured values that remain. A combine may be associative for its numbers only
    (`(a * a + b * b) ** 0.5`), so it is checked and compiled with them."""
    numbers = number_captures(text)
    if not numbers:
        return text, captured
    literals = tuple(_literal(v) if isinstance(v, torch.Tensor) else ir.literal(v)
                     for v in (captured[k] for k in numbers))
    key = (text, literals)
    with _LOCK:
        hit = _PINNED.get(key)
    if hit is None:
        kept = [k for k in range(len(captured)) if k not in numbers]
        names = {k: f"c{i}" for i, k in enumerate(kept)} | dict(zip(numbers, literals))
        head, brace, body = _NUMBERS.sub("", text).rstrip().partition("{")
        head = re.sub(r";[^)]*\)", f"; {', '.join(names[k] for k in kept)})" if kept else ")", head)
        body = _CAPTURED_NAME.sub(lambda m: names[int(m.group(1))], body)
        hit = (head + brace + body, kept)
        with _LOCK:
            if len(_PINNED) > 4096:  # a number that changes every call: keep memory bounded
                _PINNED.clear()
            _PINNED[key] = hit
    return hit[0], [captured[k] for k in hit[1]]


def compiled(key: tuple, build) -> CompiledScan:
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is None:
        hit = build()
        with _LOCK:
            _CACHE[key] = hit
    return hit


def forward(text: str, xs, captured, dim: int, reverse: bool) -> CompiledScan:
    """The compiled forward scan; ValueError (with a counterexample) when the combine is not
    associative, or when its types do not fit the leaves."""
    def build() -> CompiledScan:
        combine = ir.combine_text(text)
        rank = xs[0].ndim
        params = [param(f"x{i}", x, rank, True) for i, x in enumerate(xs)]
        params += [param(f"c{k}", c, rank, False) for k, c in enumerate(captured)]
        leaves = ", ".join(f"x{i}" for i in range(len(xs)))
        outs = ", ".join(f"y{i}" for i in range(len(xs)))
        lhs = f"({outs})" if len(xs) > 1 else outs
        cap = ", ".join(f"c{k}" for k in range(len(captured)))
        tail = (" reverse" if reverse else "") + (f" with ({cap})" if captured else "")
        program = (f"{combine}program forward({', '.join(params)}) {{\n"
                   f"  {lhs} = scan combine_fn({leaves}) dim={dim}{tail}\n"
                   f"  return {outs}\n}}\n")
        module = load(program, "associative_scan")
        try:
            module.check()
        except ValueError as e:
            raise ValueError(f"associative_scan: combine_fn is not associative (or does not "
                             f"fit the leaves): {e}\nThe traced combine:\n{combine}") from None
        return CompiledScan(module, "forward", [])

    return compiled(signature("forward", text, xs, captured, dim, reverse), build)


def load(program: str, what: str) -> scanc.Module:
    try:
        return scanc.loads(program, f"<{what}>")
    except ValueError as e:
        raise ValueError(f"associative_scan: {e}\nThe generated program:\n{program}") from None


_UNUSED_GRADS = "\n# outputs without a gradient: "


def mark_unused_grads(text: str, live: list[bool]) -> str:
    """The backward op's program text for outputs of which only those with live[j] have a
    gradient: the combine's text, and a last line naming the others (none: the text as it is)."""
    unused = [str(j) for j, has_grad in enumerate(live) if not has_grad]
    return text + _UNUSED_GRADS + " ".join(unused) if unused else text


def unmark_unused_grads(text: str, n: int) -> tuple[str, tuple[bool, ...]]:
    text, _, unused = text.partition(_UNUSED_GRADS)
    skipped = {int(j) for j in unused.split()}
    return text, tuple(j not in skipped for j in range(n))


def full(expr: str, like: str, dt: str) -> str:
    """.scan text of `expr` broadcast to the shape of `like`, in dtype `dt`."""
    return f"{dt}(where({like} == {like}, {expr}, {expr}))"


def float_dtype(xs, what: str) -> torch.dtype:
    """The one dtype of the floating-point leaves; ValueError when there are none or several."""
    floats = {x.dtype for x in xs if x.is_floating_point()}
    if len(floats) != 1:
        raise ValueError(f"associative_scan: {what} needs floating-point leaves, all of one "
                         f"dtype (integer and bool leaves get no derivative), got "
                         f"{[x.dtype for x in xs]}")
    return floats.pop()


def backward(text: str, xs, captured, dim: int, reverse: bool) -> CompiledScan:
    """The compiled backward scan of a program text marked by mark_unused_grads."""
    def build() -> CompiledScan:
        float_dtype(xs, "autograd")
        combine, live = unmark_unused_grads(text, len(xs))
        program, cap_out = _backward_text(ir.parse_combine(combine), xs, captured, dim, reverse,
                                          live)
        return CompiledScan(load(program, "associative_scan backward"), "backward", cap_out)

    return compiled(signature("backward", text, xs, captured, dim, reverse), build)


def closed_pattern(nonzero: list[list[bool]]) -> bool:
    """Whether products of matrices with this nonzero pattern keep it."""
    n = len(nonzero)
    return all(nonzero[i][j] or not any(nonzero[i][k] and nonzero[k][j] for k in range(n))
               for i in range(n) for j in range(n))


def _live_components(A: list[list[ir.Node]], has_grad: list[bool]) -> list[int]:
    """The components p of the backward state h (h_p = g_p + sum_q A[p][q] h_q of the next
    step) that can be nonzero: those of outputs with a gradient and those that feed one. The
    others are left out, not carried as zeros: a zero times a Jacobian entry that is inf or NaN
    (an unused output's own arithmetic overflowing) would make NaN, where torch's autograd never
    visits the unused output."""
    alive = list(has_grad)
    grew = True
    while grew:
        grew = False
        for p, row in enumerate(A):
            if not alive[p] and any(alive[q] and a is not ir.ZERO for q, a in enumerate(row)):
                alive[p] = grew = True
    return [p for p, a in enumerate(alive) if a]


@dataclass
class BackwardPlan:
    """What the backward computes, over positions p, q of the floating-point leaves `fl`:
    A[p][q] = d f_fl[q] / d l_fl[p] (the transposed Jacobian of the left operand), R[p][q] =
    d f_fl[p] / d r_fl[q], C[p][k] = d f_fl[p] / d c_k; `alive`, the positions whose state
    can be nonzero; `entries`, the (i, j) over positions in `alive` where A may be nonzero."""
    fl: list[int]
    A: list[list[ir.Node]]
    R: list[list[ir.Node]]
    C: list[list[ir.Node]]
    alive: list[int]
    entries: list[tuple[int, int]]


def backward_plan(comb: ir.Combine, xs, num_captured: int,
                  live: tuple[bool, ...]) -> BackwardPlan:
    """`live[j]`: whether output j has a gradient (at least one does)."""
    fl = [j for j, x in enumerate(xs) if x.is_floating_point()]
    m = len(fl)
    L, R, C = jacobians(comb.outputs, fl, range(num_captured))
    A = [[L[q][p] for q in range(m)] for p in range(m)]
    alive = _live_components(A, [live[j] for j in fl])  # positions in fl; h of the others is 0
    nonzero = [[A[p][q] is not ir.ZERO for q in alive] for p in alive]
    if not closed_pattern(nonzero):
        nonzero = [[True] * len(alive) for _ in alive]
    entries = [(i, j) for i in range(len(alive)) for j in range(len(alive)) if nonzero[i][j]]
    return BackwardPlan(fl, A, R, C, alive, entries)


def _backward_text(comb: ir.Combine, xs, captured, dim: int, reverse: bool,
                   live: tuple[bool, ...]):
    """The backward program over the differentiable (floating-point) leaves `fl`: the others
    (integers, bools: indices, flags) get no gradient and carry none, but the Jacobians are
    evaluated at their values. `live[j]`: whether output j has a gradient (at least one does).
    Returns the program and the captured indices it contributes to; it returns one dx per
    floating-point leaf, in order, then those contributions."""
    n, rank, d = comb.num_leaves, xs[0].ndim, dim
    plan = backward_plan(comb, xs, len(captured), live)
    fl, A, R, C, alive, entries = plan.fl, plan.A, plan.R, plan.C, plan.alive, plan.entries
    m = len(fl)
    dt = dtype_name(xs[fl[0]])
    size = f"D{d}"

    lines: list[str] = []
    params = [param(f"{p}{i}", x, rank, True) for p in ("x", "y") for i, x in enumerate(xs)]
    params += [param(f"c{k}", c, rank, False) for k, c in enumerate(captured)]
    params += [param(f"g{i}", x, rank, True) for i, x in enumerate(xs)]

    def sl(name: str, start, stop) -> str:
        return f"slice({name}, {d}, {start}, {stop})"

    # Where the A of step t is evaluated: (y_t, x_{t+1}) forward, (y_t, x_{t-1}) reverse.
    for j in range(n):
        shifted = (f"concat({d}, {sl(f'x{j}', 1, size)}, {sl(f'x{j}', -1, size)})" if not reverse
                   else f"concat({d}, {sl(f'x{j}', 0, 1)}, {sl(f'x{j}', 0, -1)})")
        lines.append(f"  xs{j} = {shifted}")
    env_a = {"l": "y", "r": "xs", "c": "c"}
    a_nodes = [A[alive[i]][alive[j]] for i, j in entries]
    a_text = ir.print_statements(a_nodes, lambda v: f"{env_a[v.value[0]]}{v.value[1]}", "ea",
                                 lines)
    for (i, j), expr, node in zip(entries, a_text, a_nodes):
        lines.append(f"  a{i}_{j} = " + (f"{dt}({expr})" if ir.depends_on(node, ("l", "r"))
                                         else full(expr, f"x{fl[0]}", dt)))
    scan_leaves = [f"a{i}_{j}" for i, j in entries] + [f"g{fl[p]}" for p in alive]
    scan_outs = ["_"] * len(entries) + [f"h{fl[p]}" for p in alive]
    direction = "" if reverse else " reverse"
    lines.append(f"  ({', '.join(scan_outs)}) = scan affine_backward({', '.join(scan_leaves)}) "
                 f"dim={d}{direction}")
    # dx_t = R^T g_t and captured contributions at (y_{t-1}, x_t) (reverse: (y_{t+1}, x_t)).
    prev, cur = ((0, -1), (1, size)) if not reverse else ((1, size), (0, -1))
    for j in range(n):
        lines.append(f"  yp{j} = {sl(f'y{j}', *prev)}")
        lines.append(f"  xc{j} = {sl(f'x{j}', *cur)}")
    for p in alive:
        lines.append(f"  hc{fl[p]} = {sl(f'h{fl[p]}', *cur)}")
    env_p = {"l": "yp", "r": "xc", "c": "c"}
    terms_dx = [[(R[p][q], fl[p]) for p in alive if R[p][q] is not ir.ZERO] for q in range(m)]
    terms_dc = [[(C[p][c], fl[p]) for p in alive if C[p][c] is not ir.ZERO]
                for c in range(len(captured))]
    flat = [t for group in terms_dx + terms_dc for t, _ in group]
    texts = iter(ir.print_statements(flat, lambda v: f"{env_p[v.value[0]]}{v.value[1]}", "ep",
                                     lines))

    def weighted_sum(group) -> str:
        return " + ".join(f"{next(texts)} * hc{i}" for _, i in group)

    results = []
    for q, j in enumerate(fl):
        tail = weighted_sum(terms_dx[q]) if terms_dx[q] else full("0", f"xc{j}", dt)
        # y_0 = x_0: dx_0 = h_0 (0 where h_j is)
        bounds = (0, 1) if not reverse else (-1, size)
        first = sl(f"h{j}", *bounds) if q in alive else full("0", sl(f"x{j}", *bounds), dt)
        parts = (first, f"dt{j}") if not reverse else (f"dt{j}", first)
        lines.append(f"  dt{j} = {tail}")
        lines.append(f"  dx{j} = concat({d}, {parts[0]}, {parts[1]})")
        results.append(f"dx{j}")
    cap_out = []
    for k, group in enumerate(terms_dc):
        if group:
            lines.append(f"  dc{k} = {weighted_sum(group)}")
            results.append(f"dc{k}")
            cap_out.append(k)
    program = (ir.print_combine(affine_combine(len(alive), entries), "affine_backward") + "\n" +
               f"program backward({', '.join(params)}) {{\n" + "\n".join(lines) +
               f"\n  return {', '.join(results)}\n}}\n")
    return program, cap_out


def affine_combine(n: int, entries: list[tuple[int, int]]) -> ir.Combine:
    """The combine (pA.., pb.. | qA.., qb..) -> (qA pA, qA pb + qb) of affine maps h -> A h + b
    (p applied first) over the nonzero entries of the n x n matrices A: leaves are the entries
    in order, then b's n components."""
    index = {entry: e for e, entry in enumerate(entries)}
    count = len(entries)

    def row_times(i: int, column) -> ir.Node:
        """The sum over k of qA[i][k] * column(k), where both are nonzero, from k = 0 up."""
        out = ir.ZERO
        for k in range(n):
            if (i, k) in index and column(k) is not None:
                out = ir.make("+", out, ir.make("*", ir.var("r", index[i, k]), column(k)))
        return out

    outs = [row_times(i, lambda k: ir.var("l", index[k, j]) if (k, j) in index else None)
            for i, j in entries]
    outs += [ir.make("+", row_times(i, lambda k: ir.var("l", count + k)), ir.var("r", count + i))
             for i in range(n)]
    return ir.Combine(count + n, 0, outs)
