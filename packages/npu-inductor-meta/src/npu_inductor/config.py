"""npu-inductor's own settings, whose defaults come from ``NPU_INDUCTOR_*`` variables read
when this module is first imported (``npu_inductor_core.env_config``). A plain module, not a
torch config module: the ``npu-inductor`` commands that read it (``features``, ``doctor``)
must work before, and without, ``import torch``. Nothing here changes generated code.
"""

from typing import Optional

from npu_inductor_core import env_config as _env

# Internal (our test tooling, not a user setting): the feature-results file `npu-inductor
# features` reads; None: the nearest test-results/features.json (results.find).
results: Optional[str] = _env.text("NPU_INDUCTOR_RESULTS", internal=True)
