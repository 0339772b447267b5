"""LoTES (Long Term Evaluation Scheduling), one module per stage.

``stage1`` (allocation LP, K^j), ``bins`` (Algorithm 1), ``assignment``
(machine assignment LP, rounding, rho), ``dispatch`` (the online policy and
the registered scheduler class), ``queues`` (the class queues).
"""

from __future__ import annotations

from simcore.schedulers import register
from simcore.schedulers.lotes.dispatch import LoTESDispatcher

LoTES = register("lotes")(LoTESDispatcher)

__all__ = ["LoTES", "LoTESDispatcher"]
