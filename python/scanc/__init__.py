"""scanc: a compiler and runtime for associative scans.

    import scanc
    mod = scanc.load("file.scan")          # or scanc.loads(text)
    (h,) = mod.run("mamba", x, dt, A, backend="auto")

Inputs are NumPy arrays or any DLPack tensor (torch, JAX, CuPy), with any strides, on the CPU
or a CUDA device; Python numbers and lists are taken as arrays of the parameter's dtype.
Outputs come back as a tuple, one per returned value, of the same kind as the inputs (the first
tensor input decides; NumPy when there is none), without a copy. NumPy has no bf16: a bf16
result bound for NumPy comes back widened to float32.

Errors that are the caller's (bad text, inputs that do not fit the program, an unknown backend)
raise CompileError, a subclass of ValueError whose message starts with file:line:col where there
is text; failures inside a backend raise RuntimeError.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import _core
from ._core import CompileError

__all__ = [
    "CompileError",
    "Module",
    "available_backends",
    "default_backend",
    "finish_compiles",
    "load",
    "loads",
    "lower",
]
__version__ = "0.1.0"

# numpy dtypes of the parameters Python numbers may be passed for (bf16 has none).
_NUMPY_DTYPES = {
    "bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "f16": np.float16, "f32": np.float32, "f64": np.float64,
}


def available_backends() -> list[str]:
    """Backends usable on this machine, e.g. ["cpu", "reference"] (plus "auto", always)."""
    return list(_core.available_backends())


def default_backend() -> str:
    """The backend that backend="auto" runs on here: "cuda" with a GPU, else "cpu"."""
    return _core.default_backend()


def finish_compiles() -> None:
    """Waits until no kernel compiles in the background. On CUDA a program's first run launches
    quick builds of its kernels (the same results, several times slower) while the full builds
    compile behind it; later runs take the full builds once they are done. Call this before
    timing runs."""
    _core.finish_compiles()


def load(path: str | os.PathLike[str]) -> Module:
    """Parses a .scan file. CompileError (a ValueError) with file:line:col on bad text."""
    return Module(_core.load(os.fspath(path)))


def loads(text: str, file: str = "<string>") -> Module:
    """Parses .scan text; `file` names it in error messages."""
    return Module(_core.loads(text, file))


def lower(source: str | os.PathLike[str] | Module, program: str | None = None,
          **options: Any) -> str | bytes:
    """Lowers the scans of a program of a .scan file (or a loaded Module); see Module.lower.

        onnx_bytes = scanc.lower("mamba.scan", emit="onnx", bounds={"L": 4096})
    """
    module = source if isinstance(source, Module) else load(source)
    return module.lower(program, **options)


_FRAMEWORKS = ("numpy", "torch", "jax", "cupy", "dlpack")  # where run_tensors' outputs go


def _framework(x: Any) -> str | None:
    """The framework a tensor belongs to, by its type's top-level package; None for Python
    numbers and lists, which become NumPy arrays of the parameter's dtype."""
    if isinstance(x, (bool, int, float, np.generic, list, tuple)):
        return None
    return type(x).__module__.split(".")[0]


def _sizes_by_symbol(option: str, values: Any) -> dict[str, int]:
    """bounds= or sizes= as the core takes them, a dict of size symbols to int64 sizes: a
    TypeError naming the entry for anything else (bools too, as Python would take them for
    0 and 1); the core checks the values themselves."""
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise TypeError(f"{option}= must be a dict of size symbols to sizes, e.g. "
                        f"{{'L': 4096}}; got {values!r}")
    checked = {}
    for name, value in values.items():
        if not isinstance(name, str):
            raise TypeError(f"{option}={{{name!r}: ...}}: a size symbol is a str")
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{option}={{{name!r}: {value!r}}}: a size is an int")
        if not -2**63 <= int(value) < 2**63:
            raise CompileError(f"{option}={{{name!r}: {value!r}}}: beyond a 64-bit size")
        checked[name] = int(value)
    return checked


class Module:
    """The combines and programs of one .scan file, compiled on first run per backend."""

    def __init__(self, core: _core.CoreModule) -> None:
        self._core = core

    @property
    def programs(self) -> list[str]:
        """Program names, in order of definition."""
        return list(self._core.programs)

    @property
    def combines(self) -> list[str]:
        """Combine names, in order of definition."""
        return list(self._core.combines)

    def print(self) -> str:
        """The canonical text of the module (what `scanc print` writes)."""
        return self._core.text()

    def params(self, program: str | None = None) -> list[tuple[str, str, list[int | str]]]:
        """(name, dtype, dims) of each parameter; dims are ints or size symbols."""
        return [(n, t, list(d)) for n, t, d in self._core.params(program or "")]

    def check(self) -> list[dict[str, Any]]:
        """Verifies every program and tests every scan's combine for associativity.

        Returns one dict per scan: program, combine, dim, reverse, trials, pattern (what the
        combine was recognized as, or "unknown") and location. Raises CompileError with a
        counterexample when a combine is not associative.
        """
        return list(self._core.check())

    def run(self, *args: Any, backend: str = "auto", num_threads: int = 0,
            ordered: bool = False, stream: int = 0,
            out: list[Any] | None = None) -> tuple[Any, ...]:
        """run(program, *inputs, backend="auto") -> tuple of outputs.

        The program name may be left out when the module has exactly one program.
        num_threads (CPU: 0 = the backend's default) and ordered (CPU: combine strictly left to
        right) are passed to the backend. stream (CUDA): the CUstream handle to run on, e.g.
        torch.cuda.current_stream().cuda_stream; 0 is the default stream. out (CUDA and CPU):
        one writable tensor per result on the run's device, of its dtype and shape (any
        strides), overlapping no input; the run writes there and returns them (what a CUDA
        graph capture wants: memory the caller owns). The reference backend raises
        CompileError for it.
        """
        if args and isinstance(args[0], str):
            program, inputs = args[0], args[1:]
        elif len(self._core.programs) == 1:
            program, inputs = self._core.programs[0], args
        else:
            raise TypeError(
                f"run() needs the program name first: this module has programs "
                f"{', '.join(self._core.programs) or '(none)'}")
        params = self._core.params(program)
        arrays = []
        framework = None
        for i, x in enumerate(inputs):
            kind = _framework(x)
            if kind is None:
                x = self._scalar_array(x, params[i] if i < len(params) else None)
            else:
                framework = framework or kind
                if kind == "torch" and getattr(x, "requires_grad", False):
                    x = x.detach()  # DLPack refuses tensors that require grad
            arrays.append(x)
        return self._core.run(program, arrays, backend, framework or "numpy", num_threads,
                              ordered, stream, out)

    def run_tensors(self, program: str, inputs: list[Any], *, backend: str, framework: str,
                    num_threads: int = 0, stream: int = 0,
                    outputs: list[Any] | None = None) -> tuple[Any, ...]:
        """run() without its conveniences, for a hot path that already holds one DLPack
        tensor or capsule per parameter (scanc.torch): no Python numbers, no program-name
        inference, no framework sniffing. Outputs go to `framework` ("torch", "numpy", ...;
        "dlpack" hands back bare DLPack capsules); `outputs` as run()'s `out`."""
        if framework not in _FRAMEWORKS:
            raise ValueError(f"run_tensors: framework must be one of {', '.join(_FRAMEWORKS)}, "
                             f"got {framework!r}")
        return self._core.run(program, inputs, backend, framework, num_threads, False, stream,
                              outputs)

    def lower(self, program: str | None = None, *, algorithm: str = "auto",
              bounds: dict[str, int] | None = None, sizes: dict[str, int] | None = None,
              emit: str = "scan", native_cumsum: bool = False) -> str | bytes:
        """The program with every scan lowered into slice/concat/elementwise ops (what
        `scanc lower` does): .scan text for emit="scan", ONNX model bytes for emit="onnx".

        algorithm: "hillis-steele", "work-efficient" or "auto". bounds: {"L": 4096} lowers a
        dynamic length for every size up to the bound; sizes: {"L": 1000} fixes it (a
        TypeError for anything but a dict of size symbols to ints).
        """
        return self._core.lower(program or "", algorithm, _sizes_by_symbol("bounds", bounds),
                                _sizes_by_symbol("sizes", sizes), emit, native_cumsum)

    def emit(self, program: str | None = None, *, target: str = "cuda", arch: str = "sm_90",
             ptx: bool = False) -> str:
        """The CUDA C++ source the cuda backend generates for the program, or with ptx=True
        the PTX NVRTC compiles it into for `arch` (what `scanc emit` writes). Needs no GPU;
        ptx needs libnvrtc. CompileError for a combine that is not associative, an arch NVRTC
        cannot compile for, or a build without the CUDA backend."""
        return self._core.emit(program or "", target, arch, ptx)

    @staticmethod
    def _scalar_array(x: Any, param: tuple[str, str, list[Any]] | None) -> np.ndarray:
        if param is None:  # more inputs than parameters: let the core report the count
            return np.asarray(x)
        name, dtype, _ = param
        if dtype not in _NUMPY_DTYPES:
            what = "list" if isinstance(x, (list, tuple)) else "number"
            raise CompileError(
                f"input `{name}` is a Python {what}, but its dtype {dtype} has no NumPy "
                f"equivalent; pass a tensor (e.g. torch.bfloat16)")
        natural = np.asarray(x)
        try:  # no NumPy warning for NaN or inf into an integer: the check below refuses it
            with np.errstate(invalid="ignore"):
                out = natural.astype(_NUMPY_DTYPES[dtype])
        except (OverflowError, TypeError, ValueError) as e:
            raise CompileError(f"input `{name}`: {x!r} is no {dtype} ({e})") from None
        # Integers and bools take only values they hold exactly: 1.5 is no i32, 300 no u8.
        if out.dtype.kind in "biu" and not np.array_equal(out.astype(natural.dtype), natural):
            raise CompileError(f"input `{name}`: {x!r} holds values that {dtype} cannot "
                               f"represent exactly; pass an array of dtype {dtype} to convert "
                               f"on purpose")
        return out

    def __repr__(self) -> str:
        return f"<scanc.Module programs={self.programs} combines={self.combines}>"
