"""How numba compiles our kernels: helpers are linked, not built alone; the kernel is optimised once.

Numba compiles every ``@inline`` helper (``register_jitable``) as a function of
its own: a CPython and a C wrapper, an O3 optimisation of its module (and of
every helper linked into it, again), and machine code that nothing ever runs,
because the kernel that calls the helper inlines it. Kernels call one helper
from another five or six levels deep, so the same code was optimised and
emitted many times: about two thirds of a kernel's first compile (21 s for
FCFS and MRIS on this 2-core machine).

Here a helper's code is lowered, given numba's function-level clean-up, and
linked into its callers, with no wrappers, module optimisation or machine code
of its own (:class:`HelperLibrary`). The kernel that Python calls
(``@njit``, :class:`KernelLibrary`) links every helper it reaches, makes them
private to its module (so LLVM may drop the arguments a helper does not use:
the state tuples are about 200 words at every call) and runs one O3 pipeline
tuned for event loops (see :func:`kernel_pipeline`), then emits machine code
once. The code that runs is the same Python, typed and lowered by numba as
before; only the order and number of LLVM's optimisation runs changed, which
the kernel equivalence tests check (``tests/simcore/test_kernels.py``).

This reaches into numba's code generation (``numba.core.codegen``,
``typed_passes.BaseNativeLowering``, ``CPUContext.get_executable``):
:func:`install` checks the pieces it needs and leaves numba as it is when one is
missing (kernels then compile the slow way, with the same results), and
``pyproject.toml`` bounds numba to the versions this was tested with. Only
functions decorated through :mod:`simcore.compiled.jit` are affected; other
numba code in the process compiles as numba does.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Python functions (their code objects) of our kernels and helpers, registered by ``jit.njit``/``jit.inline``.
KERNELS: set[Any] = set()
HELPERS: set[Any] = set()

#: LLVM's inlining threshold in a kernel's module. Helpers are private there, so LLVM's own bonus inlines every
#: helper called once, and dead-argument elimination shortens the calls it leaves; this threshold decides the
#: rest (helpers called from several places: ``start``, ``fits``, a tree update).
INLINE_THRESHOLD = 225

#: Set by :func:`install`: whether helpers are linked only (False: numba's own way).
installed = False


def kernel_pipeline(codegen: Any) -> tuple[Any, Any]:
    """The module pipeline a kernel gets: O3, without loop vectorisation, interleaving or runtime unrolling.

    The kernels' loops run over two or three resources, a heap's four children or a tree's levels, whose
    counts LLVM cannot see: runtime unrolling and vectorising them made copies of every loop for counts
    that never occur (``LoopUnrollPass`` was a fifth of MRIS's LLVM time, and the code it made the
    register allocator's and instruction selector's work) and did not make the runs faster.
    """
    import llvmlite.binding as ll

    pto = ll.create_pipeline_tuning_options()
    pto.speed_level = 3
    pto.loop_vectorization = False
    pto.slp_vectorization = False
    pto.loop_interleaving = False
    pto.loop_unrolling = False
    pto.inlining_threshold = INLINE_THRESHOLD
    pb = ll.create_pass_builder(codegen._tm, pto)
    return pb.getModulePassManager(), pb


def install() -> bool:
    """Teach numba the two library kinds; False (and numba untouched) if its internals are not as expected."""
    global installed
    if installed:
        return True
    try:
        # Typed as Any: these are numba's internals, which its stubs do not describe.
        _dynfunc: Any = importlib.import_module("numba._dynfunc")
        cg: Any = importlib.import_module("numba.core.codegen")
        cpu: Any = importlib.import_module("numba.core.cpu")
        typed_passes: Any = importlib.import_module("numba.core.typed_passes")
        compiler_lock: Any = importlib.import_module("numba.core.compiler_lock")
        require_global_compiler_lock = compiler_lock.require_global_compiler_lock

        base = cg.JITCodeLibrary
        methods = ("_get_module_for_linking", "_optimize_final_module", "add_llvm_module", "_raise_if_finalized")
        if not all(hasattr(base, m) for m in methods):
            return False
        if not hasattr(typed_passes.BaseNativeLowering, "run_pass") or not hasattr(cpu.CPUContext, "get_executable"):
            return False
    except (ImportError, AttributeError):
        return False

    class HelperLibrary(base):  # type: ignore[misc, valid-type]
        """A helper's code, to be linked into kernels: no optimisation of its own module, no machine code."""

        def finalize(self) -> None:
            require_global_compiler_lock()
            self._raise_if_finalized()
            seen: set[Any] = set()
            for library in self._linking_libraries:
                if library not in seen:
                    self._reload_init.update(library._reload_init)
                    seen.add(library)
                    self._final_module.link_in(library._get_module_for_linking(), preserve=True)
            self._finalized = True

        def get_pointer_to_function(self, name: str) -> int:
            self._ensure_finalized()
            return 0  # never called from Python: there is no machine code of its own

    class KernelLibrary(base):  # type: ignore[misc, valid-type]
        """A kernel: its helpers linked in and made private, one tuned O3 run, machine code once."""

        def __init__(self, codegen: Any, name: str) -> None:
            super().__init__(codegen, name)
            self._own: set[str] = set()

        def add_llvm_module(self, ll_module: Any) -> None:
            # The functions this kernel defines itself (its body and wrappers) keep their external names.
            self._own.update(f.name for f in ll_module.functions if not f.is_declaration)
            super().add_llvm_module(ll_module)

        def _optimize_final_module(self) -> None:
            for fn in self._final_module.functions:
                if not fn.is_declaration and fn.name not in self._own:
                    fn.linkage = "internal"
            mpm, mpb = kernel_pipeline(self._codegen)
            with self._recorded_timings.record("Module passes (simcore kernel pipeline)", mpb):
                mpm.run(self._final_module, mpb)

    lowering_run = typed_passes.BaseNativeLowering.run_pass

    def run_pass(self: Any, state: Any) -> Any:
        if state.library is None:
            code = getattr(state.func_id.func, "__code__", None)
            cls = HelperLibrary if code in HELPERS else KernelLibrary if code in KERNELS else None
            if cls is not None:
                state.library = cls(state.targetctx.codegen(), state.func_id.func_qualname)
                state.library.enable_object_caching()
        return lowering_run(self, state)

    get_executable = cpu.CPUContext.get_executable

    def executable(self: Any, library: Any, fndesc: Any, env: Any) -> Any:
        if isinstance(library, HelperLibrary):
            # What numba's own get_executable returns, minus the machine code and the environment's
            # address (neither exists): a function object that is only ever inlined.
            library._ensure_finalized()
            name = fndesc.qualname.split(".")[-1]
            return _dynfunc.make_function(fndesc.lookup_module(), name, "inlined only", 0, env, (library,))
        return get_executable(self, library, fndesc, env)

    typed_passes.BaseNativeLowering.run_pass = run_pass
    cpu.CPUContext.get_executable = executable
    installed = True
    return True
